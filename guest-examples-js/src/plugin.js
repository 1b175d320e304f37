// A prompt-host plugin in JavaScript, componentized against ../wit (world `plugin`).
//
// `init` declares, through the imported `registry` interface:
//   - a fixed section `js:hello` that references the host variable `{{model}}` and this
//     plugin's own variable `{{js_assembly}}`,
//   - a dynamic section `js:scope`, computed per assembly by `sectionText`,
//   - a dynamic variable `js_assembly`, computed per assembly by `variable`,
//   - a listener `js:stamp`, called with the assembly handle by `onAssemble`.

import {
  declareSection,
  declareVariable,
  declareListener,
} from 'prompt-host:plugin/registry@0.1.0';
import { log } from 'prompt-host:plugin/log@0.1.0';

const HELLO = 'js:hello';
const SCOPE = 'js:scope';
const VARIABLE = 'js_assembly';
const LISTENER = 'js:stamp';

/// An exported function returns `err(e)` when it throws an object carrying `payload`.
class PluginError extends Error {
  constructor(tag, message) {
    super(message);
    this.payload = { tag, val: message };
  }
}

/// The host sends a context only when it changed since this instance's previous call
/// (`undefined` = unchanged), so keep the last one.
let context = { scopeChain: [], facts: [] };
const remember = (cx) => {
  if (cx !== undefined) context = cx;
  return context;
};

let settings = { greeting: 'These lines come from a JavaScript plugin.', stamp: 'JS' };
let assemblies = 0;

/// Turn a registry refusal (thrown with the `registry-error` variant as payload) into a
/// plugin error naming the declaration.
function declare(what, f) {
  try {
    f();
  } catch (e) {
    const why = e.payload ? `${e.payload.tag}: ${e.payload.val}` : String(e);
    throw new PluginError('failed', `declaring ${what}: ${why}`);
  }
}

export const contributor = {
  init(config) {
    let parsed;
    try {
      parsed = JSON.parse(config);
    } catch (e) {
      throw new PluginError('invalid-input', `invalid config: ${e.message}`);
    }
    for (const [key, value] of Object.entries(parsed)) {
      if (!(key in settings)) {
        throw new PluginError('invalid-input', `invalid config: unknown key "${key}"`);
      }
      if (typeof value !== 'string') {
        throw new PluginError('invalid-input', `invalid config: ${key} must be a string`);
      }
    }
    settings = { ...settings, ...parsed };

    declare(HELLO, () =>
      declareSection({
        name: HELLO,
        order: 150,
        text: {
          tag: 'fixed',
          val: `You run on {{model}}. ${settings.greeting} This is assembly {{${VARIABLE}}}.`,
        },
        complete: false,
      }),
    );
    declare(SCOPE, () =>
      declareSection({ name: SCOPE, order: 160, text: { tag: 'dynamic' }, complete: false }),
    );
    declare(VARIABLE, () => declareVariable(VARIABLE, { tag: 'dynamic' }));
    declare(LISTENER, () => declareListener(LISTENER, { prepend: false, global: false }));
    log('info', `declared ${HELLO}, ${SCOPE}, ${VARIABLE} and ${LISTENER}`);
  },

  sectionText(name, cx) {
    const { scopeChain, facts } = remember(cx);
    if (name !== SCOPE) throw new PluginError('invalid-input', `unknown section ${name}`);
    const scope = scopeChain.length > 0 ? scopeChain.join(' < ') : 'global';
    const known = facts.map(([key]) => key).join(', ') || 'none';
    return `Scope: ${scope}. Facts from the caller: ${known}.`;
  },

  contextText(name, cx) {
    remember(cx);
    throw new PluginError('invalid-input', `unknown context ${name}`);
  },

  variable(name, cx) {
    remember(cx);
    if (name !== VARIABLE) throw new PluginError('invalid-input', `unknown variable ${name}`);
    assemblies += 1;
    return String(assemblies);
  },

  tools(key, cx) {
    remember(cx);
    throw new PluginError('invalid-input', `unknown tool provider ${key}`);
  },

  onAssemble(key, assembly, cx) {
    remember(cx);
    if (key !== LISTENER) throw new PluginError('invalid-input', `unknown listener ${key}`);
    // Let the inner listeners run first, then stamp the result.
    assembly.next();
    const names = assembly.sectionNames();
    const text = assembly.section(HELLO);
    if (text !== undefined) {
      assembly.setSection(HELLO, `${text} [${settings.stamp}: checked ${names.length} sections]`);
    }
  },
};
