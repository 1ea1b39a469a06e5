// Browsers cannot reach in (docs/protocol.md "Browsers"): Duet has no web
// page of its own, so a request or socket upgrade that carries `Origin`
// (only browsers send one) is refused with 403 unless the var
// DUET_ALLOW_ORIGIN (a comma list) names that origin. The Host check of
// `duet serve` (421 against DNS rebinding on loopback) has no counterpart:
// Cloudflare routes a request to the Worker by its host name.

import type { Env } from "./env";
import { ApiError } from "./http";

export const ORIGIN_REFUSED =
  "requests from web pages are refused: Duet's API is for its clients, not for browsers " +
  "(set the var DUET_ALLOW_ORIGIN to a comma list of origins to allow some)";

/** The allowed origins, as browsers send them (`scheme://host[:port]`), lowercase. */
export function allowedOrigins(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((o) => o.trim().replace(/\/+$/, "").toLowerCase())
    .filter((o) => o !== "");
}

/** The 403 of a request from a browser whose origin is not allowed, if it is one. */
export function originRefusal(request: Request, env: Env): ApiError | undefined {
  const origin = request.headers.get("origin");
  if (origin === null) return undefined;
  if (allowedOrigins(env.DUET_ALLOW_ORIGIN).includes(origin.trim().toLowerCase())) return undefined;
  return new ApiError(403, "forbidden", { origin: [ORIGIN_REFUSED] });
}
