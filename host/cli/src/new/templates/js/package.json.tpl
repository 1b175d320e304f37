{
  "name": "__NAME__",
  "version": "0.1.0",
  "private": true,
  "type": "module",
  "description": "A prompt-host plugin written in JavaScript, built into a WebAssembly component",
  "scripts": {
    "prebuild": "node -e \"require('node:fs').mkdirSync('dist', { recursive: true })\"",
    "build": "jco componentize src/plugin.js --wit wit/0.1.0 --world-name plugin --disable http fetch-event --out dist/plugin.wasm"
  },
  "devDependencies": {
    "@bytecodealliance/componentize-js": "0.23.0",
    "@bytecodealliance/jco": "1.34.0"
  },
  "overrides": {
    "@bytecodealliance/jco": {
      "@bytecodealliance/componentize-js": "$@bytecodealliance/componentize-js"
    }
  }
}
