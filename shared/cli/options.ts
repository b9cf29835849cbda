import type { Command, Option } from "commander";

/**
 * Options a command cannot run without. Commander checks its own required options before it
 * looks at unknown ones, so a typo such as `--typ` would get "required option '--type' not
 * specified" and no "did you mean --type?". These are checked in a preAction hook instead, which
 * runs after the unknown-option check, and they say "(required)" in --help, which commander's
 * required options do not.
 */
const required = new WeakMap<Option, string>();

/** Marks `option` required; `hint` is added to the error when it is missing. */
export function need(option: Option, hint?: string): Option {
  option.description = `(required) ${option.description}`;
  required.set(option, hint ? `: ${hint}` : "");
  return option;
}

/** Installs the check on `root`, for every command below it. */
export function checkRequiredOptions(root: Command): void {
  root.hook("preAction", (_root, action) => {
    for (const option of action.options) {
      const hint = required.get(option);
      if (hint !== undefined && action.getOptionValue(option.attributeName()) === undefined) {
        action.error(`error: required option '${option.flags}' not specified${hint}`, {
          code: "commander.missingMandatoryOptionValue",
        });
      }
    }
  });
}
