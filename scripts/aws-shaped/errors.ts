/** A template value the harness cannot turn into a local one; `where` names the place in the template. */
export class UnresolvedReferenceError extends Error {
  constructor(
    readonly where: string,
    readonly reason: string,
  ) {
    super(`${where}: ${reason}`);
    this.name = "UnresolvedReferenceError";
  }
}

/** The synthesized template lacks something the harness needs to run it as AWS would. */
export class TemplateShapeError extends Error {
  constructor(
    readonly logicalId: string,
    readonly reason: string,
  ) {
    super(`${logicalId}: ${reason}`);
    this.name = "TemplateShapeError";
  }
}

/** An invocation that did not return: the handler threw, the process died, or it ran past its timeout. */
export class LambdaInvocationError extends Error {
  constructor(
    readonly functionName: string,
    readonly kind: "error" | "timeout" | "crash" | "init" | "throttled",
    readonly errorType: string,
    message: string,
  ) {
    super(`${functionName}: ${kind}: ${errorType}: ${message}`);
    this.name = "LambdaInvocationError";
  }
}

/** A call some function made that its role in the template does not allow. */
export class IamDeniedError extends Error {
  constructor(readonly denied: readonly string[]) {
    super(`calls the template's roles do not allow:\n  ${denied.join("\n  ")}`);
    this.name = "IamDeniedError";
  }
}
