import { type Command, InvalidArgumentError, Option } from "commander";
import type { HourglassClient } from "../client/client.ts";
import { need } from "./options.ts";
import { type Output, table } from "./output.ts";

type Context = (command: Command) => { client: HourglassClient; out: Output };

const positive = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("a whole number, 1 or more");
  return n;
};

/** `sku=quantity` pairs, such as `tshirt-m=2`. */
const item = (value: string, previous: { sku: string; quantity: number }[] = []) => {
  const match = /^([A-Za-z0-9._:-]{1,128})=(\d+)$/.exec(value);
  if (!match) throw new InvalidArgumentError("sku=quantity, such as tshirt-m=2");
  return [...previous, { sku: match[1]!, quantity: Number(match[2]) }];
};

/** `hourglass stock …`, `hourglass hold|confirm|release`, `hourglass lease …`. */
export function addLedgerCommands(root: Command, context: Context): void {
  const stock = root.command("stock").description("stock levels and their ledger");
  stock
    .command("receive <sku> <quantity>")
    .description("stock in")
    .option("--id <id>", "receipt id: the same receipt sent twice counts once")
    .action(async (sku: string, quantity: string, options, command: Command) => {
      const { client, out } = context(command);
      const levels = await client.receiveStock(sku, {
        quantity: positive(quantity),
        ...(options.id && { id: options.id }),
      });
      out.print(
        levels,
        () =>
          `${sku}: on hand ${levels.onHand}, held ${levels.held}, sold ${levels.sold}, available ${levels.available}`,
      );
    });
  stock
    .command("get <sku>")
    .description("on hand, held, sold and available")
    .action(async (sku: string, _options, command: Command) => {
      const { client, out } = context(command);
      const levels = await client.stock(sku);
      out.print(
        levels,
        () =>
          `${sku}: on hand ${levels.onHand}, held ${levels.held}, sold ${levels.sold}, available ${levels.available}`,
      );
    });
  stock
    .command("ledger <sku>")
    .description("the SKU's ledger entries, in the order they committed")
    .option("--limit <n>", "entries per page", positive, 100)
    .option("--reconcile", "also recompute the levels from the ledger and show any drift")
    .action(async (sku: string, options, command: Command) => {
      const { client, out } = context(command);
      const page = await client.ledger(sku, { limit: Math.min(100, options.limit) });
      const report = options.reconcile ? await client.reconcile(sku) : undefined;
      out.print(report ? { ...page, reconcile: report } : page, () => {
        const rows = table({ head: ["#", "at", "kind", "quantity", "reservation"] });
        for (const e of page.entries)
          rows.push([e.seq ?? "", e.at, e.kind, e.quantity, e.reservationId ?? ""]);
        const lines = [page.entries.length ? rows.toString() : "(no entries)"];
        if (report)
          lines.push(report.ok ? "ledger and counters agree" : `DRIFT: ${JSON.stringify(report.drift)}`);
        return lines.join("\n");
      });
    });

  root
    .command("hold")
    .description("hold stock for a while: all items or none")
    .addOption(need(new Option("--item <sku=quantity>", "an item; repeat for more").argParser(item)))
    .addOption(need(new Option("--for <seconds>", "how long the hold lasts").argParser(positive)))
    .option("--id <id>", "reservation id (idempotency key)")
    .action(async (options, command: Command) => {
      const { client, out } = context(command);
      const held = await client.hold({
        items: options.item,
        holdSeconds: options.for,
        ...(options.id && { id: options.id }),
      });
      out.print(held, () => `held ${held.id} until ${held.expiresAt}`);
    });
  root
    .command("confirm <reservation>")
    .description("sell what a hold holds")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      const done = await client.confirm(id);
      out.print(done, () => `confirmed ${done.id}`);
    });
  root
    .command("release <reservation>")
    .description("cancel a hold now")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      const done = await client.cancelHold(id);
      out.print(done, () => `released ${done.id}`);
    });

  const lease = root.command("lease").description("distributed locks with fencing tokens");
  lease
    .command("acquire <name>")
    .description("take a lease")
    .addOption(need(new Option("--owner <owner>", "who takes it")))
    .option("--ttl <seconds>", "how long it lasts", positive, 30)
    .action(async (name: string, options, command: Command) => {
      const { client, out } = context(command);
      const grant = await client.acquireLease(name, { owner: options.owner, ttlSeconds: options.ttl });
      out.print(
        grant,
        () => `${name}: held by ${grant.owner} until ${grant.expiresAt}, token ${grant.token}`,
      );
    });
  // Not --token: that is the global bearer token.
  const leaseToken = () =>
    need(new Option("--lease-token <n>", "the fencing token acquire gave").argParser(positive));
  lease
    .command("renew <name>")
    .description("extend a lease you hold")
    .addOption(need(new Option("--owner <owner>", "who holds it")))
    .addOption(leaseToken())
    .option("--ttl <seconds>", "how long it lasts from now", positive, 30)
    .action(async (name: string, options, command: Command) => {
      const { client, out } = context(command);
      const grant = await client.renewLease(name, {
        owner: options.owner,
        token: options.leaseToken,
        ttlSeconds: options.ttl,
      });
      out.print(
        grant,
        () => `${name}: held by ${grant.owner} until ${grant.expiresAt}, token ${grant.token}`,
      );
    });
  lease
    .command("release <name>")
    .description("give a lease up")
    .addOption(need(new Option("--owner <owner>", "who holds it")))
    .addOption(leaseToken())
    .action(async (name: string, options, command: Command) => {
      const { client, out } = context(command);
      const state = await client.releaseLease(name, { owner: options.owner, token: options.leaseToken });
      out.print(state, () => `${name}: released (last token ${state.token})`);
    });
}
