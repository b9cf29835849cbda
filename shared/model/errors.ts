/** A queue message that is not one Hourglass sent: the worker sets it aside instead of retrying it. */
export class MalformedMessageError extends Error {
  constructor(readonly body: string) {
    super(`not an Hourglass dispatch message: ${body.slice(0, 200)}`);
    this.name = "MalformedMessageError";
  }
}
