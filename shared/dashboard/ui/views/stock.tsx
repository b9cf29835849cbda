import { useState } from "preact/hooks";
import { api, enc } from "../api.ts";
import { ErrorNote, Loading, Section } from "../components/bits.tsx";
import { count, relative, utc } from "../format.ts";
import { usePoll } from "../poll.ts";
import type { LedgerPage, Stock as StockBody } from "../types.ts";
import { AddName, useWatched } from "./lookup.tsx";

const SKU = /^[A-Za-z0-9._:-]{1,128}$/;

/** Counters of the SKUs a person watches, and the ledger of the one selected. */
export function Stock() {
  const [skus, setSkus] = useWatched("hourglass.skus");
  const [open, setOpen] = useState<string | undefined>(skus[0]);
  return (
    <>
      <h1 tabIndex={-1}>Stock</h1>
      <AddName
        label="SKU"
        pattern={SKU}
        rule="1 to 128 letters, digits, dots, underscores, colons or dashes"
        onAdd={(sku) => {
          setSkus([...new Set([...skus, sku])]);
          setOpen(sku);
        }}
      />
      {skus.length === 0 && <p class="muted">Add a SKU to watch its stock and ledger.</p>}
      <ul class="cards">
        {skus.map((sku) => (
          <StockCard key={sku} sku={sku} selected={sku === open} onSelect={() => setOpen(sku)} />
        ))}
      </ul>
      {open && skus.includes(open) && (
        <Ledger
          sku={open}
          onRemove={() => {
            setSkus(skus.filter((s) => s !== open));
            setOpen(undefined);
          }}
        />
      )}
    </>
  );
}

function StockCard({ sku, selected, onSelect }: { sku: string; selected: boolean; onSelect: () => void }) {
  const stock = usePoll(() => api<StockBody>(`v1/stock/${enc(sku)}`), 2_000, [sku]);
  const s = stock.data;
  return (
    <li class={`card wide ${selected ? "selected" : ""}`}>
      <button type="button" class="link" aria-pressed={selected} onClick={onSelect}>
        {sku}
      </button>
      <ErrorNote error={stock.error} what={sku} />
      {s && (
        <span class="value small">
          {count(s.available)} available · {count(s.held)} held · {count(s.sold)} sold · {count(s.onHand)} on
          hand
        </span>
      )}
    </li>
  );
}

function Ledger({ sku, onRemove }: { sku: string; onRemove: () => void }) {
  const ledger = usePoll(() => api<LedgerPage>(`v1/stock/${enc(sku)}/ledger?limit=50`), 3_000, [sku]);
  return (
    <Section title={`Ledger of ${sku}`} id="ledger">
      <button type="button" onClick={onRemove}>
        Stop watching {sku}
      </button>
      <ErrorNote error={ledger.error} what="the ledger" />
      {!ledger.data && !ledger.error && <Loading what="the ledger" />}
      {ledger.data && ledger.data.entries.length === 0 && <p class="muted">No entries.</p>}
      {ledger.data && ledger.data.entries.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">when</th>
              <th scope="col">kind</th>
              <th scope="col" class="num">
                quantity
              </th>
              <th scope="col">reservation</th>
            </tr>
          </thead>
          <tbody>
            {ledger.data.entries.map((entry) => (
              <tr key={entry.id}>
                <td title={utc(entry.at)}>{relative(entry.at)}</td>
                <td>{entry.kind}</td>
                <td class="num">{entry.quantity}</td>
                <td class="mono">{entry.reservationId ?? "–"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}
