import type { z } from "zod";
import type * as Client from "../../packages/client/src/types.ts";
import type * as EventSchemas from "../events/schema.ts";
import type { Grant, State } from "../http/routes/leases.ts";
import type { Schedule } from "../http/routes/schedules.ts";
import type { Ledger, Reconcile, ReservationBody, Stock } from "../http/routes/stock.ts";
import type { TypeLimits } from "../http/routes/type-limits.ts";
import type {
  BatchResponse,
  Event,
  EventPage,
  Health,
  ProblemSchema,
  ScheduledEvent,
  Stats,
} from "../http/schemas.ts";
import type { HoldInput } from "../ledger/model.ts";
import type { LimitsInput } from "../limits/model.ts";
import type * as ScheduleSchemas from "../schedules/schema.ts";

/**
 * The client package carries plain types, so it installs without the server's schemas. This file
 * holds them to those schemas: each pair must be assignable both ways, or `tsc --noEmit` (and so
 * `npm test`) fails here, naming the pair that drifted.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;

export type ClientContract = [
  Holds<Same<Client.EventBody, z.infer<typeof Event>>>,
  Holds<Same<Client.ScheduledEventBody, z.infer<typeof ScheduledEvent>>>,
  Holds<Same<Client.EventPageBody, z.infer<typeof EventPage>>>,
  Holds<Same<Client.BatchResponseBody, z.infer<typeof BatchResponse>>>,
  Holds<Same<Client.StatsBody, z.infer<typeof Stats>>>,
  Holds<Same<Client.HealthBody, z.infer<typeof Health>>>,
  Holds<Same<Client.ProblemBody, z.infer<typeof ProblemSchema>>>,
  Holds<Same<Client.StockBody, z.infer<typeof Stock>>>,
  Holds<Same<Client.LedgerPageBody, z.infer<typeof Ledger>>>,
  Holds<Same<Client.ReconcileBody, z.infer<typeof Reconcile>>>,
  Holds<Same<Client.ReservationBody, z.infer<typeof ReservationBody>>>,
  Holds<Same<Client.LeaseGrantBody, z.infer<typeof Grant>>>,
  Holds<Same<Client.LeaseBody, z.infer<typeof State>>>,
  Holds<Same<Client.ScheduleBody, z.infer<typeof Schedule>>>,
  Holds<Same<Client.TypeLimitsBody, z.infer<typeof TypeLimits>>>,
  Holds<Same<Client.ScheduleInput, EventSchemas.ScheduleInput>>,
  Holds<Same<Client.RescheduleInput, EventSchemas.RescheduleInput>>,
  Holds<Same<Client.HoldInput, HoldInput>>,
  Holds<Same<Client.LimitsInput, LimitsInput>>,
  Holds<Same<Client.CreateScheduleInput, ScheduleSchemas.CreateScheduleInput>>,
  Holds<Same<Client.PatchScheduleInput, ScheduleSchemas.PatchScheduleInput>>,
];
