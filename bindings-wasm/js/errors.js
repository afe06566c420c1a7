// The one error class of the package. Every promise of the API rejects with a DeadLetterError;
// the WebAssembly side builds them (src/errors.rs) through the class registered in index.js.

export class DeadLetterError extends Error {
  /**
   * @param {string} message what went wrong, for humans (not stable)
   * @param {{ code: string, errors?: Array<{ field: string, code: string, message: string }> }} details
   */
  constructor(message, { code, errors = [] }) {
    super(message);
    this.name = "DeadLetterError";
    this.code = code;
    this.errors = errors;
  }
}
