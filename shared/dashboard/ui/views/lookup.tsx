import { useState } from "preact/hooks";

/**
 * The names a person watches (leases, SKUs): the API looks them up one at a time and has no list,
 * so the page remembers them in this browser.
 */
export function useWatched(key: string): [string[], (names: string[]) => void] {
  const [names, setNames] = useState<string[]>(() => {
    try {
      const saved = JSON.parse(localStorage.getItem(key) ?? "[]") as unknown;
      return Array.isArray(saved) ? saved.filter((n): n is string => typeof n === "string") : [];
    } catch {
      return [];
    }
  });
  const save = (next: string[]) => {
    localStorage.setItem(key, JSON.stringify(next));
    setNames(next);
  };
  return [names, save];
}

export function AddName({
  label,
  pattern,
  rule,
  onAdd,
}: {
  label: string;
  pattern: RegExp;
  rule: string;
  onAdd: (name: string) => void;
}) {
  const [text, setText] = useState("");
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const id = `add-${label.toLowerCase().replace(/\W+/g, "-")}`;
  return (
    <form
      class="search"
      onSubmit={(e) => {
        e.preventDefault();
        const name = text.trim();
        if (!pattern.test(name)) {
          setProblem(`"${name.slice(0, 140)}" is not valid: ${rule}.`);
          return;
        }
        setProblem(undefined);
        setText("");
        onAdd(name);
      }}
    >
      <label for={id}>{label}</label>
      <input
        id={id}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        aria-invalid={Boolean(problem)}
      />
      <button type="submit">Show</button>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}
