import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import type { TenantSecrets, WebhookSigning } from "../../handlers/signing.ts";
import { json, problems } from "../schemas.ts";
import type { TenantEnv } from "../tenancy.ts";

const tags = ["Webhooks"];

export const WebhookSecret = z
  .object({
    secret: z.string().openapi({
      description:
        "The caller's current signing secret (`whsec_` + base64), for `new Webhook(secret)` of the `standardwebhooks` package.",
    }),
    generation: z.number().int().openapi({ description: "Rises by one on each rotation." }),
    rotatedAt: z.string().datetime().optional(),
    previous: z.object({ secret: z.string(), expiresAt: z.string().datetime() }).optional().openapi({
      description:
        "After a rotation, the previous secret: it signs too (a second signature in `webhook-signature`) until `expiresAt`.",
    }),
    older: z
      .array(z.object({ secret: z.string(), expiresAt: z.string().datetime() }))
      .optional()
      .openapi({
        description:
          "Secrets before the previous one, rotated away while still in their overlap: each keeps signing until its own `expiresAt`.",
      }),
  })
  .openapi("WebhookSecret");

const RotateBody = z
  .object({
    overlapSeconds: z
      .number()
      .int()
      .min(60)
      .max(7 * 86_400)
      .optional()
      .openapi({
        description: "How long the previous secret keeps signing beside the new one. Default one day.",
      }),
  })
  .strict()
  .openapi("WebhookSecretRotate");

const DEFAULT_OVERLAP_SECONDS = 86_400;

function view(secrets: TenantSecrets): z.infer<typeof WebhookSecret> {
  return {
    secret: secrets.current,
    generation: secrets.generation,
    ...(secrets.rotatedAt !== undefined && { rotatedAt: new Date(secrets.rotatedAt).toISOString() }),
    ...(secrets.previous && {
      previous: {
        secret: secrets.previous.secret,
        expiresAt: new Date(secrets.previous.expiresAt).toISOString(),
      },
    }),
    ...(secrets.older && {
      older: secrets.older.map((entry) => ({
        secret: entry.secret,
        expiresAt: new Date(entry.expiresAt).toISOString(),
      })),
    }),
  };
}

/** The caller's own webhook signing secret, and its rotation. Nobody can read another tenant's. */
export function mountWebhookSecretRoutes(
  app: OpenAPIHono<TenantEnv>,
  signing: () => Pick<WebhookSigning, "secretsFor" | "rotate">,
): void {
  app.openapi(
    createRoute({
      method: "get",
      path: "/v1/webhook-secret",
      tags,
      summary: "The secret your webhooks are signed with (Standard Webhooks)",
      responses: { 200: json(WebhookSecret, "Your signing secret"), ...problems(503) },
    }),
    async (c) => c.json(view(await signing().secretsFor(c.get("tenant"))), 200),
  );

  app.openapi(
    createRoute({
      method: "post",
      path: "/v1/webhook-secret/rotate",
      tags,
      summary: "Start signing with a new secret; the previous one keeps signing during the overlap",
      description:
        "Each secret rotated away keeps signing until its own overlap ends, also when rotations follow each other. " +
        "At most 4 earlier secrets sign at once: one more rotation answers 409 with `retryAt`, when the earliest stops.",
      request: {
        body: { content: { "application/json": { schema: RotateBody } }, required: false },
      },
      responses: { 200: json(WebhookSecret, "The new secret"), ...problems(409, 422, 501, 503) },
    }),
    async (c) => {
      const overlapSeconds = c.req.valid("json")?.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS;
      return c.json(view(await signing().rotate(c.get("tenant"), overlapSeconds * 1000)), 200);
    },
  );
}
