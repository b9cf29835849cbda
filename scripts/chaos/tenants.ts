/**
 * The soak's tenants, each with its own bearer token (HOURGLASS_API_TOKENS), so invariant 7 is
 * exercised between real tenants: `main` carries the original load and the schedules, `noisy`
 * builds large and held backlogs, `quiet` sends a trickle and reads its own stats and timeline.
 * Event ids carry the tenant's prefix (e-, n-, q-), so an id names one tenant's event.
 */
export type TenantName = "main" | "noisy" | "quiet";

export const TENANTS: Readonly<Record<TenantName, { readonly id: string; readonly token: string }>> = {
  main: { id: "chaos-main", token: "chaos-main-token-0001" },
  noisy: { id: "chaos-noisy", token: "chaos-noisy-token-0002" },
  quiet: { id: "chaos-quiet", token: "chaos-quiet-token-0003" },
};

/** HOURGLASS_API_TOKENS for the API process. */
export const API_TOKENS = Object.values(TENANTS)
  .map((t) => `${t.id}:${t.token}`)
  .join(",");

export const ID_PREFIX: Readonly<Record<TenantName, string>> = { main: "e", noisy: "n", quiet: "q" };

/** The tenant an event id belongs to, by its prefix. */
export function tenantOfId(id: string): TenantName {
  if (id.startsWith("n-")) return "noisy";
  if (id.startsWith("q-")) return "quiet";
  return "main";
}
