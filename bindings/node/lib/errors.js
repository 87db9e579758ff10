// Errors with a stable `code` (README.md, "Errors"): the native half's codes, and the file
// system's failures in the user's words.

/** An Error with a stable `code`, as the native half throws them. */
export function codedError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

/**
 * Runs a file system call of `operation` on `path`; its failure becomes a `TREELOG_IO` error
 * that names the path, what was done and what to check (a bare Node `EACCES` says neither).
 */
export function fsCall(operation, path, body) {
  try {
    return body();
  } catch (error) {
    if (typeof error?.code !== "string" || !error.code.startsWith("E")) throw error;
    const hint =
      error.code === "EACCES" || error.code === "EPERM"
        ? "permission denied: check the permissions of the file and of its folder"
        : error.code === "ENOSPC"
          ? "no space left on the device"
          : error.message;
    const wrapped = codedError("TREELOG_IO", `cannot ${operation} ${path}: ${hint}`);
    wrapped.cause = error;
    throw wrapped;
  }
}

