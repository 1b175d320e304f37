/// An exported function returns `err(e)` when it throws an object whose `payload` is the
/// `plugin-error` variant. Any other exception traps the instance, so catch what you can.
class PluginError extends Error {
  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

/// The host sends the context only when it changed since this instance's previous call
/// (`undefined` = unchanged), so keep the last one.
let context = { scopeChain: [], facts: [] };
const remember = (cx) => {
  if (cx !== undefined) context = cx;
  return context;
};

/// The config (host.toml's `config` table as JSON text) over `defaults`: unknown keys and
/// values of another type are refused, so a typo fails the load instead of being ignored.
function parseConfig(text, defaults) {
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new PluginError('invalid-input', `invalid config: ${e.message}`);
  }
  for (const [key, value] of Object.entries(parsed)) {
    if (!(key in defaults)) {
      throw new PluginError('invalid-input', `invalid config: unknown key "${key}"`);
    }
    if (typeof value !== typeof defaults[key]) {
      throw new PluginError('invalid-input', `invalid config: ${key}: expected ${typeof defaults[key]}`);
    }
  }
  return { ...defaults, ...parsed };
}

/// Run one declaration; a registry refusal (thrown with the `registry-error` variant as
/// payload) becomes a plugin error naming the declaration.
function declare(what, f) {
  try {
    f();
  } catch (e) {
    const why = e.payload ? `${e.payload.tag}: ${e.payload.val}` : String(e);
    throw new PluginError('failed', `declaring ${what}: ${why}`);
  }
}

/// The error for a callback the host only calls for entries this plugin declared dynamic.
const notDeclared = (what, name) => new PluginError('invalid-input', `no ${what} "${name}"`);
