/** The API's response shapes, as the page reads them (see docs/openapi.json). */
export type EventStatus =
  | "scheduled"
  | "dispatched"
  | "running"
  | "succeeded"
  | "retrying"
  | "dead"
  | "cancelled";

export const STATUSES: readonly EventStatus[] = [
  "scheduled",
  "dispatched",
  "running",
  "retrying",
  "succeeded",
  "dead",
  "cancelled",
];

export interface HgEvent {
  id: string;
  type: string;
  status: EventStatus;
  runAt: string;
  attempts: number;
  maxAttempts: number;
  lastError?: string;
  payload: unknown;
  createdAt: string;
  updatedAt: string;
}

export interface EventPage {
  events: HgEvent[];
  cursor?: string;
}

export interface Stats {
  byStatus: Partial<Record<EventStatus, number>>;
  byType: Record<string, Partial<Record<EventStatus, number>>>;
  oldestOverdueMs: number;
  indexSize: number;
  /** Shown when the API reports them; older servers do not. */
  paused?: boolean;
  quarantined?: number;
}

export interface LatenessSummary {
  count: number;
  p50Ms: number | null;
  p99Ms: number | null;
}

export interface TypeMetrics {
  created: number[];
  started: number[];
  succeeded: number[];
  failed: number[];
  givenBack: number[];
  latenessP50Ms: (number | null)[];
  latenessP99Ms: (number | null)[];
  lateness: {
    lastHour: LatenessSummary;
    lastDay: LatenessSummary;
    histogram: { upToMs: number; count: number }[];
  };
}

export interface Metrics {
  window: "1h" | "24h";
  from: string;
  stepSeconds: number;
  total: TypeMetrics;
  types: Record<string, TypeMetrics>;
}

export type Horizon = "hour" | "day" | "week" | "year";

export interface Timeline {
  horizon: Horizon;
  from: string;
  bucketSeconds: number;
  types: Record<string, number[]>;
  overdue: Record<string, number>;
  truncated: boolean;
}

export interface Lease {
  name: string;
  held: boolean;
  holder?: string;
  token: number;
  expiresAt?: string;
}

export interface Stock {
  sku: string;
  onHand: number;
  held: number;
  sold: number;
  available: number;
}

export interface LedgerPage {
  entries: { id: string; kind: string; quantity: number; reservationId?: string; at: string }[];
  cursor?: string;
}

/** Schedules and type limits are read loosely: their shapes belong to routes built elsewhere. */
export type Loose = Record<string, unknown>;
