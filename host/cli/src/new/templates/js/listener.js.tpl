// __NAME__: a prompt-host plugin in JavaScript with an assembly listener that rewrites a
// section, componentized against wit/0.1.0 (world `plugin`).
//
// The host runs the listeners of an assembly as a waterfall: each receives the assembly as a
// handle, may change it, and calls `assembly.next()` to run the listeners inside it;
// afterwards the handle holds their result. Not calling `next()` short-circuits: the inner
// listeners do not run. A listener pays only for what it reads and writes through the handle.
//
// This plugin declares a fixed section, `__NAME__:outline`, and a listener (key `__NAME__`)
// that, after `next()`, rewrites that section to list the sections the prompt ends up with.

import { declareSection, declareListener } from 'prompt-host:plugin/registry@0.1.0';
import { log } from 'prompt-host:plugin/log@0.1.0';

const LISTENER = '__NAME__';
const OUTLINE = '__NAME__:outline';

__PRELUDE__
let settings = { intro: 'Sections of this prompt:' };

export const contributor = {
  init(config) {
    settings = parseConfig(config, settings);
    // The fixed text stands when the listener does not run.
    declare(OUTLINE, () =>
      declareSection({ name: OUTLINE, order: 190, text: { tag: 'fixed', val: settings.intro }, complete: false }),
    );
    // Appended (not prepended), receiving the assemblies of its scope and descendants.
    declare(LISTENER, () => declareListener(LISTENER, { prepend: false, global: false }));
    log('debug', `declared ${OUTLINE} and the listener ${LISTENER}`);
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
    remember(cx);
    throw notDeclared('dynamic variable', name);
  },

  tools(key, cx) {
    remember(cx);
    throw notDeclared('tool provider', key);
  },

  onAssemble(key, assembly, cx) {
    remember(cx);
    if (key !== LISTENER) throw notDeclared('listener', key);
    // Let the rest of the chain run first, so the outline sees what it added. An inner
    // failure throws here; let it propagate (it fails the assembly anyway).
    assembly.next();
    const names = assembly.sectionNames();
    assembly.setSection(OUTLINE, `${settings.intro} ${names.join(', ')}.`);
  },
};
