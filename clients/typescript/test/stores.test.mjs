// Sessions in a SQLite database (`sqlite:PATH#ID`): two servers taking turns on one session
// each read what the other wrote first (racing writers are told `conflict`: the Rust suite);
// a bad name is refused with its reason.

import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";

import { PromptHostError } from "prompt-host";
import { rejection, session, tempDir, withHost } from "./helpers.mjs";

test("two servers on one SQLite session take turns; each catches up with the other", async () => {
  const ctx = session();
  try {
    const name = `sqlite:${join(tempDir(), "sessions.db")}#agent "7"; DROP TABLE events`;
    const [first, second] = [ctx.start(), ctx.start()];
    const facts = { model: "m" };
    for (let turn = 0; turn < 3; turn++) {
      assert.equal((await first.step({ session: name, facts, user: [`turn ${turn} from the first`] })).step, 2 * turn);
      await first.appendAssistant({ session: name, text: "ok" });
      const b = await second.step({ session: name, facts, user: [`turn ${turn} from the second`] });
      assert.equal(b.step, 2 * turn + 1);
      await second.appendAssistant({ session: name, text: "ok" });
      const replayed = await first.request({ session: name });
      assert.equal(replayed.step, 2 * turn + 1);
      assert.deepEqual(replayed.request, b.request);
    }
  } finally {
    await ctx.done();
  }
});

test("a bad SQLite session name is refused with its reason", () =>
  withHost(async (host) => {
    const db = join(tempDir(), "s.db");
    const e = await rejection(host.step({ session: `sqlite:${db}#`, facts: { model: "m" }, user: ["hi"] }));
    assert.ok(e instanceof PromptHostError, String(e));
    assert.equal(e.kind, "session");
    assert.match(e.message, /session id "": is empty/);
  }));
