import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { StockLedger } from "../../ledger/ledger-service.ts";
import { holdInput, RESERVATION_ID, type Reservation, receiptInput, SKU } from "../../ledger/model.ts";
import { checkLedgerCursor } from "../cursors.ts";
import { json, jsonRequest, PageQuery, problems } from "../schemas.ts";
import type { TenantEnv } from "../tenancy.ts";

const SkuParam = z.object({
  sku: z
    .string()
    .regex(SKU)
    .openapi({ param: { name: "sku", in: "path" }, example: "tshirt-m-blue" }),
});
const IdParam = z.object({
  id: z
    .string()
    .regex(RESERVATION_ID)
    .openapi({ param: { name: "id", in: "path" } }),
});
export const Stock = z
  .object({
    sku: z.string(),
    onHand: z.number().int(),
    held: z.number().int(),
    sold: z.number().int(),
    available: z.number().int(),
  })
  .openapi("Stock");
const Entry = z
  .object({
    id: z.string().openapi({ description: "The entry's position in the SKU's ledger." }),
    seq: z
      .number()
      .int()
      .optional()
      .openapi({
        description:
          "Its number in the SKU's commit order: 1, 2, 3… without gaps, so the ledger replays as the counters changed. " +
          "Absent on entries written before the ledger was numbered, which come first.",
      }),
    kind: z.enum(["STOCK_IN", "HOLD", "CONFIRM", "RELEASE"]),
    quantity: z.number().int(),
    reservationId: z.string().optional(),
    at: z.string().datetime().openapi({
      description:
        "When it was written, by the clock of the process that wrote it: clocks differ, so the order is `seq`'s, not this.",
    }),
  })
  .openapi("LedgerEntry");
export const Ledger = z
  .object({ entries: z.array(Entry), cursor: z.string().optional() })
  .openapi("LedgerPage");
export const Reconcile = z
  .object({
    sku: z.string(),
    counters: Stock,
    ledger: Stock,
    drift: z.object({ onHand: z.number(), held: z.number(), sold: z.number(), available: z.number() }),
    ok: z.boolean(),
    entriesRead: z.number().int(),
    snapshotUpTo: z.string().optional(),
  })
  .openapi("Reconcile");
export const ReservationBody = z
  .object({
    id: z.string(),
    status: z.enum(["held", "confirmed", "cancelled", "expired"]),
    items: z.array(z.object({ sku: z.string(), quantity: z.number().int() })),
    expiresAt: z.string().datetime(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .openapi("Reservation");

function reservation(r: Reservation) {
  return {
    id: r.id,
    status: r.status,
    items: [...r.items],
    expiresAt: new Date(r.expiresAt).toISOString(),
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
  };
}

export function mountStockRoutes(app: OpenAPIHono<TenantEnv>, ledger: () => StockLedger): void {
  const stockTags = ["Stock"];
  const holdTags = ["Reservations"];

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/stock/{sku}/receipts",
      tags: stockTags,
      summary: "Stock in",
      request: { params: SkuParam, ...jsonRequest(receiptInput.openapi("Receipt")) },
      responses: { 201: json(Stock, "The SKU's levels after the receipt"), ...problems(400, 415, 422, 503) },
    }),
    async (c) =>
      c.json(await ledger().receive(c.get("tenant"), c.req.valid("param").sku, c.req.valid("json")), 201),
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/stock/{sku}",
      tags: stockTags,
      summary: "On hand, held, sold and available",
      request: { params: SkuParam },
      responses: { 200: json(Stock, "Levels"), ...problems(503) },
    }),
    async (c) => c.json(await ledger().stock(c.get("tenant"), c.req.valid("param").sku), 200),
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/stock/{sku}/ledger",
      tags: stockTags,
      summary: "The SKU's ledger entries, in the order they committed",
      request: { params: SkuParam, query: PageQuery },
      responses: { 200: json(Ledger, "A page of entries"), ...problems(422, 503) },
    }),
    async (c) => {
      const { limit, cursor } = c.req.valid("query");
      const { sku } = c.req.valid("param");
      checkLedgerCursor(c.get("tenant"), sku, cursor);
      const page = await ledger().ledger(c.get("tenant"), sku, limit, cursor);
      return c.json(
        {
          entries: page.entries.map((e) => ({
            id: e.sk,
            ...(e.seq !== undefined && { seq: e.seq }),
            kind: e.kind,
            quantity: e.quantity,
            ...(e.reservationId && { reservationId: e.reservationId }),
            at: new Date(e.at).toISOString(),
          })),
          ...(page.cursor && { cursor: page.cursor }),
        },
        200,
      );
    },
  );

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/stock/{sku}/reconcile",
      tags: stockTags,
      summary: "Recompute the levels from the ledger and report any drift from the counters",
      request: { params: SkuParam },
      responses: { 200: json(Reconcile, "The comparison"), ...problems(503) },
    }),
    async (c) => {
      const report = await ledger().reconcile(c.get("tenant"), c.req.valid("param").sku);
      return c.json(report, 200);
    },
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/reservations",
      tags: holdTags,
      summary: "Hold stock for a while: all items or none",
      description:
        "An unconfirmed hold is released by itself at expiresAt. With an id, a repeat (the same items and holdSeconds) answers 200 " +
        "with the first result; other items or another holdSeconds under that id answer 409. " +
        "When stock is short, 409 lists every short SKU with what was asked and what is available.",
      request: { ...jsonRequest(holdInput.openapi("Hold")) },
      responses: {
        201: json(ReservationBody, "Held"),
        200: json(ReservationBody, "Already held (idempotent repeat)"),
        ...problems(400, 409, 415, 422, 503),
      },
    }),
    async (c) => {
      const { reservation: held, created } = await ledger().hold(c.get("tenant"), c.req.valid("json"));
      return c.json(reservation(held), created ? 201 : 200);
    },
  );

  for (const [action, summary] of [
    ["confirm", "Sell what is held (only while held and unexpired)"],
    ["cancel", "Release a hold now"],
  ] as const) {
    app.openapi(
      createRoute({
        method: "post",
        path: `/v1/reservations/{id}/${action}`,
        tags: holdTags,
        summary,
        request: { params: IdParam },
        responses: { 200: json(ReservationBody, "Done"), ...problems(404, 409, 503) },
      }),
      async (c) => {
        const { id } = c.req.valid("param");
        const done =
          action === "confirm"
            ? await ledger().confirm(c.get("tenant"), id)
            : await ledger().release(c.get("tenant"), id, "cancelled");
        return c.json(reservation(done), 200);
      },
    );
  }

  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/reservations/{id}",
      tags: holdTags,
      summary: "Read a reservation",
      request: { params: IdParam },
      responses: { 200: json(ReservationBody, "The reservation"), ...problems(404, 503) },
    }),
    async (c) => {
      const found = await ledger().getReservation(c.get("tenant"), c.req.valid("param").id);
      const status = found.status === "held" && found.expiresAt <= Date.now() ? "expired" : found.status;
      return c.json(reservation({ ...found, status }), 200);
    },
  );
}
