// The worker's operation table (src/ops.ts) and role table (src/access.ts)
// against docs/operations.json, the file duet serve's tables are checked
// against too: a method, route, action, role or refusal that drifts on
// either side fails here or there.
import { describe, expect, it } from "vitest";
import declared from "../../docs/operations.json";
import { TABLE } from "../src/access";
import { METHODS, OPERATIONS, READS } from "../src/ops";

/** `chatToRoom` as the file names it: `chat_to_room`. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

describe("docs/operations.json", () => {
  it("lists the worker's room operations: methods in order, routes, actions", () => {
    const ours = METHODS.map((method) => ({
      method,
      route: OPERATIONS[method].route,
      actions: OPERATIONS[method].actions.map(snake),
    }));
    expect(ours).toEqual(declared.operations);
  });

  it("lists the worker's role table: actions in order, least roles, refusal words", () => {
    const ours = Object.entries(TABLE).map(([action, [role, refusal]]) => ({ action: snake(action), role, refusal }));
    expect(ours).toEqual(declared.actions);
    expect(declared.roles).toEqual(["viewer", "writer", "owner"]);
  });

  it("has every action an operation or a read names in the role table", () => {
    const known = new Set(declared.actions.map((a) => a.action));
    const named = [...Object.values(OPERATIONS), ...Object.values(READS)].flatMap((e) => ("actions" in e ? [...e.actions] : []));
    for (const action of named) expect(known.has(snake(action)), action).toBe(true);
  });

  it("gives every route with an {id} the field it fills, and no other", () => {
    for (const [kind, entry] of [...Object.entries(OPERATIONS), ...Object.entries(READS)]) {
      const hasId = entry.route?.includes("{id}") ?? false;
      expect("id" in entry, kind).toBe(hasId);
    }
  });
});
