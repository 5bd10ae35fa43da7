// The program's world, evaluated before the program in the same context. Every tool the
// agent holds is an async function here (`name(args)`), and the same functions are the
// properties of `tools`. A call goes out through the host's `__call` (one call at a time, in
// the order the program makes them) and comes back as a value; a refused call rejects with an
// Error whose `code` is the refusal's stable code. `console.log` (and `info`, `warn`,
// `error`) write lines to the program's output. `args` is what `run_program` was given.
(() => {
  const call = __call;
  const print = __print;
  const finish = __finish;
  const names = JSON.parse(__tools);

  const show = (value) => {
    if (typeof value === "string") return value;
    try {
      const text = JSON.stringify(value);
      return text === undefined ? String(value) : text;
    } catch (e) {
      return String(value);
    }
  };

  const tool = (name) => async (args) => {
    const answer = JSON.parse(call(name, JSON.stringify(args === undefined ? {} : args)));
    if (answer.error !== undefined) {
      const error = new Error(answer.error.message);
      error.name = "ToolError";
      error.code = answer.error.code;
      error.tool = name;
      throw error;
    }
    return answer.ok;
  };

  const table = {};
  for (const name of names) {
    table[name] = tool(name);
    globalThis[name] = table[name];
  }
  globalThis.tools = Object.freeze(table);

  // A program run again after a crash must make the same calls at the same places (their
  // effect keys are built from the places), so nothing in it may differ between runs: the
  // random numbers are a fixed sequence (xorshift32 from a fixed seed), not the clock's.
  let seed = 0x9e3779b9 | 0;
  Math.random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 4294967296;
  };

  const log = (...parts) => print(parts.map(show).join(" "));
  globalThis.console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });
  globalThis.args = JSON.parse(__args);

  const describe = (error) =>
    JSON.stringify({
      name: error && error.name !== undefined ? String(error.name) : "Error",
      message: error && error.message !== undefined ? String(error.message) : show(error),
      code: error && typeof error.code === "string" ? error.code : null,
      stack: error && typeof error.stack === "string" ? error.stack : "",
    });

  // Settles the program's promise into the host: the value as JSON, or the error described.
  globalThis.__settle = (promise) => {
    delete globalThis.__settle;
    return promise.then(
      (value) => {
        let text;
        try {
          text = JSON.stringify(value === undefined ? null : value) ?? "null";
        } catch (e) {
          const error = new TypeError(`the program's result cannot be written as JSON: ${e.message}`);
          return finish(false, describe(error));
        }
        return finish(true, text);
      },
      (error) => finish(false, describe(error)),
    );
  };

  for (const name of ["__call", "__print", "__finish", "__tools", "__args"]) {
    delete globalThis[name];
  }
})();
