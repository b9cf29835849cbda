import type { Reply } from "../protocols.ts";
import type { ServiceCall } from "../service-call.ts";
import type { GatewayPrincipal } from "../types.ts";

/**
 * A service the gateway answers itself instead of forwarding: its operations by name. An operation
 * runs only after IAM allowed the call, and answers in the call's protocol or throws an AwsFault.
 */
export type LocalOperation = (call: ServiceCall, caller: GatewayPrincipal) => Reply | Promise<Reply>;

export type LocalService = Readonly<Record<string, LocalOperation>>;
