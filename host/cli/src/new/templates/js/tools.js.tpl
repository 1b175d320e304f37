// __NAME__: a prompt-host plugin in JavaScript that provides a tool, `__SNAKE___word_count`, and
// a fixed section telling the model when to use it, componentized against wit/0.1.0 (world
// `plugin`).
//
// - The tool comes from a dynamic tool provider (key `__NAME__`): the host calls `tools` once
//   per assembly, so the set can depend on the scope and the caller's facts. Here a parameter's
//   description names the working directory when the caller passed a `cwd` fact. A set that
//   never changes is better declared fixed (`{ tag: 'fixed', val: toolSet }`).
// - Tools reach the model beside the system prompt, not in it: `prompt-host assemble` lists
//   them with their parameters, a JSON Schema object sent as JSON text.
// - `__NAME__:tools` is a fixed section in the tool-guidance band (orders 100–199).

import { declareSection, declareTools } from 'prompt-host:plugin/registry@0.1.0';
import { log } from 'prompt-host:plugin/log@0.1.0';

const PROVIDER = '__NAME__';
const TOOL = '__SNAKE___word_count';
const GUIDANCE = '__NAME__:tools';

__PRELUDE__
let settings = { max_bytes: 1000000 };

/// The tool's schema: what the model sees to decide whether and how to call it.
function wordCount(cwd) {
  const relativeTo = cwd !== undefined ? `relative to ${cwd}` : 'relative to the working directory';
  return {
    name: TOOL,
    description: `Count the lines, words and bytes of a text file of at most ${settings.max_bytes} bytes.`,
    parameters: JSON.stringify({
      type: 'object',
      properties: {
        path: { type: 'string', description: `The file's path, ${relativeTo}.` },
        words_only: { type: 'boolean', description: 'Report the word count alone.' },
      },
      required: ['path'],
      additionalProperties: false,
    }),
  };
}

export const contributor = {
  init(config) {
    settings = parseConfig(config, settings);
    declare(PROVIDER, () => declareTools({ tag: 'dynamic', val: PROVIDER }));
    declare(GUIDANCE, () =>
      declareSection({
        name: GUIDANCE,
        order: 150,
        text: { tag: 'fixed', val: `Use ${TOOL} to measure a text file instead of reading it whole.` },
        complete: false,
      }),
    );
    log('debug', `declared the tool provider ${PROVIDER}`);
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
    const { facts } = remember(cx);
    if (key !== PROVIDER) throw notDeclared('tool provider', key);
    const cwd = facts.find(([k]) => k === 'cwd');
    // `knownNames: undefined` = the names in `schemas`.
    return { schemas: [wordCount(cwd && cwd[1])], knownNames: undefined };
  },

  onAssemble(key, assembly, cx) {
    remember(cx);
    throw notDeclared('listener', key);
  },
};
