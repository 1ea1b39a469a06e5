// Which browsers may reach in (docs/protocol.md "Browsers"): Duet's own
// page (web.ts) is served at the Worker's own origin, so a request or
// socket upgrade that carries `Origin` (only browsers send one) is
// accepted when that origin is the request's own (`scheme://host` of its
// URL) or one the var DUET_ALLOW_ORIGIN (a comma list) names, and refused
// with 403 otherwise. The Host check of `duet serve` (421 against DNS
// rebinding on loopback) has no counterpart: Cloudflare routes a request
// to the Worker by its host name. Off Cloudflare (wrangler dev) a rebound
// name would be its own origin, so without a DUET_TOKEN (where everyone is
// an owner) the own origin counts only at a loopback name.

import type { Env } from "./env";
import { ApiError } from "./http";

export const ORIGIN_REFUSED =
  "requests from other web pages are refused: only Duet's own page, at this server's origin, " +
  "may call the API (set the var DUET_ALLOW_ORIGIN to a comma list of origins to allow others)";

/** Host names that only this machine answers. */
const LOOPBACK = ["127.0.0.1", "localhost", "[::1]"];

/** The allowed origins, as browsers send them (`scheme://host[:port]`), lowercase. */
export function allowedOrigins(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((o) => o.trim().replace(/\/+$/, "").toLowerCase())
    .filter((o) => o !== "");
}

/** The request's own origin when it counts as Duet's page's (see above), lowercase. */
function ownOrigin(request: Request, env: Env): string | undefined {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return undefined;
  }
  if ((env.DUET_TOKEN ?? "") === "" && !LOOPBACK.includes(url.hostname.toLowerCase())) return undefined;
  return url.origin.toLowerCase();
}

/** The 403 of a request from a browser whose origin is not allowed, if it is one. */
export function originRefusal(request: Request, env: Env): ApiError | undefined {
  const origin = request.headers.get("origin");
  if (origin === null) return undefined;
  const given = origin.trim().toLowerCase();
  if (given === ownOrigin(request, env)) return undefined;
  if (allowedOrigins(env.DUET_ALLOW_ORIGIN).includes(given)) return undefined;
  return new ApiError(403, "forbidden", { origin: [ORIGIN_REFUSED] });
}
