// Sessions in a SQLite database (`sqlite:PATH#ID`): two servers taking turns on one session
// each read what the other wrote first (racing writers are told `conflict`: the Rust suite);
// a bad name is refused with its reason.

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
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

// A session named by its id alone within the server's store (`PROMPT_HOST_STORE`, as
// `--store` and host.toml's `[sessions] store` set it): SQLite, and the PostgreSQL server
// `PROMPT_HOST_TEST_POSTGRES` names (`.ci/run` starts one).
for (const kind of ["sqlite", "postgres"]) {
  const base = process.env.PROMPT_HOST_TEST_POSTGRES;
  const skip = kind === "postgres" && !base ? "PROMPT_HOST_TEST_POSTGRES is not set (.ci/run starts PostgreSQL and sets it)" : false;
  test(`a session is named by its id within the ${kind} store the server is given`, { skip }, async () => {
    const store = kind === "sqlite" ? `sqlite:${join(tempDir(), "sessions.db")}` : `${base.replace(/\/$/, "")}/postgres`;
    const ctx = session();
    try {
      const env = { PROMPT_HOST_STORE: store };
      const [first, second] = [ctx.start({ env }), ctx.start({ env })];
      const id = `agent "7"; DROP TABLE events -- ${randomUUID()}`;
      const facts = { model: "m" };
      for (let turn = 0; turn < 2; turn++) {
        assert.equal((await first.step({ session: id, facts, user: [`turn ${turn} from the first`] })).step, 2 * turn);
        await first.appendAssistant({ session: id, text: "ok" });
        const b = await second.step({ session: id, facts, user: [`turn ${turn} from the second`] });
        assert.equal(b.step, 2 * turn + 1);
        await second.appendAssistant({ session: id, text: "ok" });
        const replayed = await first.request({ session: `${store}#${id}` });
        assert.deepEqual(replayed.request, b.request);
      }
      const e = await rejection(first.step({ session: "a\u0000b", facts, user: ["hi"] }));
      assert.ok(e instanceof PromptHostError, String(e));
      assert.equal(e.kind, "session");
      assert.match(e.message, /holds the control character U\+0000/);
    } finally {
      await ctx.done();
    }
  });
}
