// Which backend `open` uses. In browsers and workers: the IndexedDB one (backend.js). Node's
// entry (`node/index.js`, package.json's "node" condition) registers the SQLite backend of the
// native module (`node/backend.js`), which `open` then uses unless an `indexedDB` option is
// given. This module imports nothing, so that a bundle for browsers never sees the native one.

let files = null;

/** Registers the backend of SQLite files (Node's entry only). */
export function useFiles(backend) {
  files = backend;
}

/** The backend of SQLite files, or null where there is none (browsers, workers). */
export function fileBackend() {
  return files;
}
