/** A script answered with something its header does not list: a bug or a foreign key layout. */
export class IndexCorruptError extends Error {
  constructor(
    readonly script: string,
    readonly reply: unknown,
  ) {
    super(`script ${script} returned an unexpected reply: ${JSON.stringify(reply)}`);
    this.name = "IndexCorruptError";
  }
}
