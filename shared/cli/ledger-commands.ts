import { type Command, InvalidArgumentError, Option } from "commander";
import { HourglassApiError, type HourglassClient } from "../client/client.ts";
import { need } from "./options.ts";
import { details, type Output, table } from "./output.ts";
import { once, StateConflictError } from "./repeats.ts";

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
  // `confirm` and `release` (top level) came first; `reservation confirm|cancel` say the same.
  const confirm = (id: string, command: Command) => {
    const { client, out } = context(command);
    return once(out, {
      subject: `reservation ${id}`,
      verb: "confirm",
      satisfied: ["confirmed"],
      act: () => client.confirm(id),
      current: () => client.reservation(id),
      done: (r) => `confirmed ${r.id}`,
    });
  };
  const cancel = (id: string, command: Command) => {
    const { client, out } = context(command);
    return once(out, {
      subject: `reservation ${id}`,
      verb: "cancel",
      // An expired hold gave its stock back, as a cancelled one did: nothing is left to do.
      satisfied: ["cancelled", "expired"],
      act: () => client.cancelHold(id),
      current: () => client.reservation(id),
      done: (r) => `released ${r.id}`,
    });
  };
  root
    .command("confirm <reservation>")
    .description("sell what a hold holds (as reservation confirm)")
    .action((id: string, _options, command: Command) => confirm(id, command));
  root
    .command("release <reservation>")
    .description("cancel a hold now (as reservation cancel)")
    .action((id: string, _options, command: Command) => cancel(id, command));

  const reservation = root.command("reservation").description("holds: show, confirm, cancel");
  reservation
    .command("get <id>")
    .description("show a reservation: status, items, expiry")
    .action(async (id: string, _options, command: Command) => {
      const { client, out } = context(command);
      const r = await client.reservation(id);
      out.print(r, () => details({ ...r, items: r.items.map((i) => `${i.sku}=${i.quantity}`).join(" ") }));
    });
  reservation
    .command("confirm <id>")
    .description("sell what the hold holds")
    .action((id: string, _options, command: Command) => confirm(id, command));
  reservation
    .command("cancel <id>")
    .description("cancel the hold now: its stock is available again")
    .action((id: string, _options, command: Command) => cancel(id, command));

  const lease = root.command("lease").description("distributed locks with fencing tokens");
  lease
    .command("acquire <name>")
    .description("take a lease")
    .addOption(need(new Option("--owner <owner>", "who takes it")))
    .option("--ttl <seconds>", "how long it lasts", positive, 30)
    .action(async (name: string, options, command: Command) => {
      const { client, out } = context(command);
      const grant = await client.acquireLease(name, { owner: options.owner, ttlSeconds: options.ttl });
      out.print(grant, () =>
        grant.alreadyHeld
          ? `${name}: already held by ${grant.owner}, now until ${grant.expiresAt}, token ${grant.token} (unchanged)`
          : `${name}: held by ${grant.owner} until ${grant.expiresAt}, token ${grant.token}`,
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
      const { owner, leaseToken: token } = options as { owner: string; leaseToken: number };
      try {
        const state = await client.releaseLease(name, { owner, token });
        out.print(state, () => `${name}: released (last token ${state.token})`);
      } catch (error) {
        if (!(error instanceof HourglassApiError) || error.status !== 409) throw error;
        // Not the holder with that token: released already (by this or an earlier call, or it
        // expired), which is what a release asks; or someone else took it, which contradicts it.
        const state = await client.lease(name);
        if (state.held && state.owner !== undefined && state.token !== token) {
          throw new StateConflictError(
            `lease ${name}`,
            "release",
            `held by ${state.owner} (token ${state.token})`,
          );
        }
        out.print(state, () => `lease ${name}: already released (last token ${state.token})`);
      }
    });
}
