import { describe as group, expect, it } from "vitest";
import { ApiError, describe } from "./api";

group("describe", () => {
  it("says why a feature the server is not set up for is unavailable, not that the database is down", () => {
    const err = new ApiError(503, "unavailable", "secrets are off on this server: start it with STITCHD_SECRET_KEY set to 32 random bytes");
    expect(describe(err)).toBe("Secrets are off on this server: start it with STITCHD_SECRET_KEY set to 32 random bytes.");
  });
  it("says the database is unreachable when it is", () => {
    expect(describe(new ApiError(503, "unavailable", "the database is unavailable; try again"))).toBe(
      "stitchd cannot reach its database right now. Try again in a moment.",
    );
    expect(describe(new ApiError(503, "unavailable", "Service Unavailable"))).toBe("stitchd cannot reach its database right now. Try again in a moment.");
  });
  it("words a route refusal without its method and route pattern", () => {
    expect(describe(new ApiError(403, "forbidden", "role viewer may not DELETE /api/v1/triggers/:id"))).toBe("Your role (viewer) may not do that here.");
    expect(describe(new ApiError(403, "forbidden", "role  may not POST /api/v1/flows"))).toBe("Your role may not do that here.");
  });
  it("keeps a refusal that explains itself", () => {
    const msg = "role operator may not cancel runs: delete without cancel_runs once they have ended, or ask an operator";
    expect(describe(new ApiError(403, "forbidden", msg))).toBe(msg);
  });
  it("says a disabled account is disabled, and what to do", () => {
    expect(describe(new ApiError(403, "account_disabled", "this account is disabled"))).toBe("This account is disabled. Ask an admin to enable it.");
  });
});
