// deadletter's WebAssembly component in JavaScript: transpiled by jco (`jco transpile
// deadletter-X.Y.Z.component.wasm --name deadletter -o DIR`: JavaScript + core wasm) and called
// as plain functions, `core.validate.enqueue(...)`.
//
// Values cross as jco makes them: a WIT record is an object with camelCase fields, an s64 or
// u64 a BigInt (ids, instants, counts), a u32 a number, an enum its case name, an option
// `undefined` or the value, a variant `{ tag, val }`. A `result` returns its `ok` value; its
// `error` is thrown as a ComponentError. Nothing here knows a rule of the queue: see
// memory-store.mjs for a store over it.

import { pathToFileURL } from "node:url";

/** An `error` of the component: `code` (`validation-failed`, `not-found`, `conflict`, `store`) and the rejected `fields` ({ field, code, reason, index }). */
export class ComponentError extends Error {
  constructor(error) {
    super(error.message);
    this.name = "ComponentError";
    this.code = error.code;
    this.fields = error.fields;
  }
}

/** The functions of one interface of the transpiled module, each throwing a ComponentError for the component's `error`. */
function wrap(iface) {
  return new Proxy(iface, {
    get(target, name) {
      const value = target[name];
      if (typeof value !== "function" || /^[A-Z]/.test(String(name))) return value;
      return (...args) => {
        try {
          return value(...args);
        } catch (err) {
          const payload = err?.payload;
          if (payload && typeof payload.code === "string" && Array.isArray(payload.fields)) throw new ComponentError(payload);
          throw err;
        }
      };
    },
  });
}

/**
 * The component transpiled into `dir` (its entry `deadletter.js`), instantiated: its interfaces
 * `validate`, `apply` and `plan` (with the resource classes `plan.Batches` and `plan.Scan`).
 */
export async function load(dir) {
  const module = await import(pathToFileURL(`${dir}/deadletter.js`).href);
  return { validate: wrap(module.validate), apply: wrap(module.apply), plan: wrap(module.plan) };
}

const I64_MIN = -(2 ** 63);
const I64_LIMIT = 2 ** 63;

/**
 * A JavaScript value as the WIT `arg` the component judges, mapped without judging: undefined
 * and null are null, a boolean a boolean, an integer (a number with `Number.isInteger`, or a
 * BigInt) within 64 bits an int (beyond: big-int), any other number a float, a well-formed string
 * text, anything else `other`.
 */
export function arg(value) {
  if (value === undefined || value === null) return { tag: "null" };
  if (typeof value === "boolean") return { tag: "boolean", val: value };
  if (typeof value === "bigint") {
    return value >= -(2n ** 63n) && value < 2n ** 63n ? { tag: "int", val: value } : { tag: "big-int" };
  }
  if (typeof value === "number") {
    if (!Number.isInteger(value)) return { tag: "float", val: value };
    return value >= I64_MIN && value < I64_LIMIT ? { tag: "int", val: BigInt(value) } : { tag: "big-int" };
  }
  if (typeof value === "string") {
    return value.isWellFormed() ? { tag: "text", val: value } : { tag: "other", val: "a string with an unpaired surrogate" };
  }
  return { tag: "other", val: Array.isArray(value) ? "an array" : `a ${typeof value}` };
}
