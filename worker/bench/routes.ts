// The paths the benchmark's clients use, answered alike by each engine
// written for the benchmark (original.ts, floor.ts), which only says how its
// room takes a socket and a message:
//   GET  /health
//   GET  /api/rooms/{room}/ws          (WebSocket)
//   POST /api/rooms/{room}/message     {"text", "userId"}

/** How an engine's room takes a socket and a message. */
export interface BenchRoom {
  socket(room: string, request: Request, url: URL): Promise<Response>;
  message(room: string, userId: string, text: string): Promise<unknown>;
}

const ROOM_PATH = /^\/api\/rooms\/([A-Za-z0-9_-]{1,64})\/(ws|message)$/;

export async function benchFetch(request: Request, rooms: BenchRoom): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/health") return new Response("ok");
  const route = ROOM_PATH.exec(url.pathname);
  if (!route) return new Response("not found", { status: 404 });
  const [, room, what] = route;
  if (what === "ws") return rooms.socket(room, request, url);
  if (request.method !== "POST") return new Response("method not allowed", { status: 405 });
  const body = (await request.json().catch(() => null)) as { text?: unknown; userId?: unknown } | null;
  if (typeof body?.text !== "string") return Response.json({ error: "text must be a string" }, { status: 400 });
  const userId = typeof body.userId === "string" ? body.userId : "anonymous";
  return Response.json(await rooms.message(room, userId, body.text));
}
