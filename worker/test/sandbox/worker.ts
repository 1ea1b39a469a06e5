// The Worker of the sandbox tests: the stand-in Durable Object and nothing
// else (the room agent has its own tests).
export { SandboxStandIn } from "../../dev/standin";

export default {
  async fetch(): Promise<Response> {
    return new Response("sandbox tests", { status: 404 });
  },
};
