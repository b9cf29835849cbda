import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";

/**
 * The handlers module of test/integration/worker-pool.test.ts's worker processes, loaded by path
 * as `npm start`'s workers load functions/handlers.ts: a no-op, so the journal's `succeeded` is
 * what the test reads.
 */
export const handlers = [defineHandler("test.pool", z.object({}), async () => {})];
