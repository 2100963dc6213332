// Runs first in every sandbox, as a global script, before any user code.
// It takes the one host function the child process lends it, keeps it in
// this closure (user code never sees it), and returns the controls the child
// drives the run with. Intrinsics are captured up front so user code that
// patches JSON or Array.prototype cannot change how results are marshaled.
(function (host, internalName) {
  'use strict';
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const objectKeys = Object.keys;
  const isArray = Array.isArray;
  const arrayFrom = Array.from;
  const isView = ArrayBuffer.isView;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const MapCtor = Map;
  const SetCtor = Set;
  const DateCtor = Date;
  const now = Date.now;
  const pending = new MapCtor();
  let linked = false;

  function marshal(value, seen) {
    switch (typeof value) {
      case 'undefined':
        return null;
      case 'boolean':
      case 'string':
        return value;
      case 'number':
        return Number.isFinite(value) ? value : String(value);
      case 'bigint':
        return value.toString();
      case 'function':
        return '[Function ' + (value.name || 'anonymous') + ']';
      case 'symbol':
        return value.toString();
    }
    if (value === null) return null;
    if (seen.has(value)) return '[Circular]';
    seen.add(value);
    try {
      if (value instanceof ErrorCtor) return { name: String(value.name), message: String(value.message) };
      if (value instanceof DateCtor) return Number.isNaN(value.getTime()) ? null : value.toISOString();
      if (isArray(value)) return value.map((item) => marshal(item, seen));
      if (value instanceof MapCtor) {
        const out = {};
        for (const [key, item] of value) out[String(key)] = marshal(item, seen);
        return out;
      }
      if (value instanceof SetCtor) return arrayFrom(value, (item) => marshal(item, seen));
      if (isView(value)) return arrayFrom(value, (item) => marshal(item, seen));
      const out = {};
      for (const key of objectKeys(value)) {
        const item = value[key];
        if (item !== undefined) out[key] = marshal(item, seen);
      }
      return out;
    } finally {
      seen.delete(value);
    }
  }

  function toJson(value) {
    return stringify(marshal(value, new SetCtor()));
  }

  // A host function bridged in: calling it asks the host and returns a promise.
  function bridge(fnId, name) {
    const fn = {
      [name](...args) {
        return new PromiseCtor((resolve, reject) => {
          const id = host('call', stringify({ fn: fnId, args: marshal(args, new SetCtor()) }));
          pending.set(id, { resolve, reject });
        });
      },
    }[name];
    return fn;
  }

  // A host value: JSON data with host functions at the paths in `fns`.
  function decode(encoded) {
    const root = { value: encoded.value };
    for (const [path, fnId] of encoded.fns) {
      let target = root;
      const full = ['value'].concat(path);
      for (let i = 0; i < full.length - 1; i++) target = target[full[i]];
      const last = full[full.length - 1];
      target[last] = bridge(fnId, typeof last === 'string' ? last : 'bridged');
    }
    return root.value;
  }

  function logger(level) {
    return (...args) => {
      host('log', stringify({ level, args: marshal(args, new SetCtor()), timestamp: now() }));
    };
  }

  function describe(error) {
    if (error instanceof ErrorCtor || (error && typeof error === 'object' && 'message' in error)) {
      return {
        name: String(error.name || 'Error'),
        message: String(error.message),
        stack: typeof error.stack === 'string' ? error.stack : '',
        filename: typeof error.fileName === 'string' ? error.fileName : null,
        line: typeof error.lineNumber === 'number' ? error.lineNumber : null,
        column: typeof error.columnNumber === 'number' ? error.columnNumber : null,
      };
    }
    // No error object at all: what the engine throws when it runs out of
    // memory while building the error (the child decides which it was).
    return { name: 'Error', message: String(error), stack: '', bare: error === null || error === undefined };
  }

  function isOutOfMemory(error) {
    return error instanceof ErrorCtor && error.name === 'InternalError' && error.message === 'out of memory';
  }

  function finish(status, value, error) {
    let payload;
    try {
      payload = stringify({ status, result: status === 'success' ? marshal(value, new SetCtor()) : null, error: error === undefined ? null : describe(error) });
    } catch (failure) {
      const kind = isOutOfMemory(failure) ? 'memory' : 'error';
      payload = stringify({ status: kind, result: null, error: { name: 'TypeError', message: 'the result could not be marshaled: ' + String(failure && failure.message), stack: '' } });
    }
    host('done', payload);
  }

  globalThis[internalName] = {
    linked() {
      linked = true;
    },
    decode,
    console: {
      log: logger('log'),
      info: logger('info'),
      warn: logger('warn'),
      error: logger('error'),
      debug: logger('debug'),
    },
    report(value) {
      host('report', toJson(value));
    },
  };

  return {
    settle(id, ok, payload) {
      const waiter = pending.get(id);
      if (!waiter) return;
      pending.delete(id);
      const body = parse(payload);
      if (ok) {
        waiter.resolve(body);
      } else {
        const error = new ErrorCtor(String(body.message));
        error.name = String(body.name || 'Error');
        waiter.reject(error);
      }
    },
    start(entry, fn, argsJson) {
      const args = parse(argsJson);
      import(entry)
        .then((ns) => {
          if (!(fn in ns)) throw new ReferenceError("export '" + fn + "' is not defined");
          const target = ns[fn];
          if (typeof target === 'function') return target(...args);
          if (args.length) throw new TypeError("export '" + fn + "' is not a function and takes no arguments");
          return target;
        })
        .then(
          (value) => finish('success', value),
          (error) => finish(!linked ? 'link_error' : isOutOfMemory(error) ? 'memory' : 'error', undefined, error),
        );
    },
  };
});
