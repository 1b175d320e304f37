// __NAME__: a prompt-host plugin in JavaScript that declares a dynamic variable,
// `{{__SNAKE___scope}}`, and a fixed section that uses it, componentized against wit/0.1.0
// (world `plugin`).
//
// - `__SNAKE___scope` is a dynamic variable: the host calls `variable` for it once per
//   assembly. Any section's text may reference it as `{{__SNAKE___scope}}`, whichever plugin
//   declared the section; a reference to a variable without a value (`undefined`) is an
//   error, never an empty string. Variable names match `^[a-z][a-z0-9_]*$`.
// - `__NAME__:where` is a fixed section: the host stores its text at `init`.

import { declareSection, declareVariable } from 'prompt-host:plugin/registry@0.1.0';
import { log } from 'prompt-host:plugin/log@0.1.0';

const VARIABLE = '__SNAKE___scope';
const SECTION = '__NAME__:where';
const SECTION_TEXT = 'This prompt is assembled for {{__SNAKE___scope}}.';

__PRELUDE__
let settings = { unscoped: 'the global scope' };

export const contributor = {
  init(config) {
    settings = parseConfig(config, settings);
    declare(VARIABLE, () => declareVariable(VARIABLE, { tag: 'dynamic' }));
    declare(SECTION, () =>
      declareSection({ name: SECTION, order: 150, text: { tag: 'fixed', val: SECTION_TEXT }, complete: false }),
    );
    log('debug', `declared ${VARIABLE} and ${SECTION}`);
  },

  sectionText(name, cx) {
    remember(cx);
    throw notDeclared('dynamic section', name);
  },

  contextText(name, cx) {
    remember(cx);
    throw notDeclared('dynamic context', name);
  },

  variable(name, cx) {
    const { scopeChain } = remember(cx);
    if (name !== VARIABLE) throw notDeclared('dynamic variable', name);
    return scopeChain.length > 0 ? `scope ${scopeChain.join(' < ')}` : settings.unscoped;
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
