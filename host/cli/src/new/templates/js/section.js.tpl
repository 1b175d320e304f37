// __NAME__: a prompt-host plugin in JavaScript that contributes two system-prompt sections,
// componentized against wit/0.1.0 (world `plugin`).
//
// - `__NAME__:rules` is fixed: `init` hands its text to the host, which stores it, so an
//   assembly never calls into the plugin for it. `{{cwd}}` is a host variable filled from the
//   caller's `cwd` fact (`prompt-host render --fact cwd=/work`); rendering fails without it.
// - `__NAME__:scope` is dynamic: the host calls `sectionText` for it once per assembly.
//
// Sections render in ascending order: -100 is the harness identity, 0 the persona, 100–199
// tool guidance.

import { declareSection } from 'prompt-host:plugin/registry@0.1.0';
import { log } from 'prompt-host:plugin/log@0.1.0';

const RULES = '__NAME__:rules';
const SCOPE = '__NAME__:scope';

__PRELUDE__
let settings = { rules: 'Work in {{cwd}}. Keep answers short.' };

export const contributor = {
  init(config) {
    settings = parseConfig(config, settings);
    declare(RULES, () =>
      declareSection({ name: RULES, order: 150, text: { tag: 'fixed', val: settings.rules }, complete: false }),
    );
    declare(SCOPE, () =>
      declareSection({ name: SCOPE, order: 160, text: { tag: 'dynamic' }, complete: false }),
    );
    log('debug', `declared ${RULES} and ${SCOPE}`);
  },

  sectionText(name, cx) {
    const { scopeChain } = remember(cx);
    if (name !== SCOPE) throw notDeclared('dynamic section', name);
    return scopeChain.length > 0
      ? `This assembly is for scope ${scopeChain[0]}.`
      : 'This assembly is for the global scope.';
  },

  contextText(name, cx) {
    remember(cx);
    throw notDeclared('dynamic context', name);
  },

  variable(name, cx) {
    remember(cx);
    throw notDeclared('dynamic variable', name);
  },

  tools(key, cx) {
    remember(cx);
    throw notDeclared('tool provider', key);
  },

  onAssemble(key, assembly, cx) {
    remember(cx);
    throw notDeclared('listener', key);
  },
};
