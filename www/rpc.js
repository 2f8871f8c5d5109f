// Request/response over postMessage with the engine worker, plus its events (docs/PAGE.md,
// "Worker protocol"). The worker can be replaced (cancel without cross-origin isolation
// terminates a worker blocked in the supervised stage): calls in flight then reject.

export class WorkerError extends Error {
  constructor(message, field) {
    super(message);
    this.name = 'WorkerError';
    this.field = field ?? null;
  }
}

export function createRpc(makeWorker) {
  const listeners = new Map();
  const pending = new Map();
  let nextId = 1;
  let worker = null;

  const emit = (event, payload = {}) => {
    for (const fn of listeners.get(event) ?? []) {
      try {
        fn(payload);
      } catch (error) {
        console.error(`listener of "${event}" failed`, error);
      }
    }
  };

  function attach() {
    worker = makeWorker();
    worker.onmessage = ({ data }) => {
      if (data.id !== undefined && pending.has(data.id)) {
        const { resolve, reject } = pending.get(data.id);
        pending.delete(data.id);
        if (data.error) reject(new WorkerError(data.error.message, data.error.field));
        else resolve(data.result);
      } else if (data.event) {
        emit(data.event, data);
      }
    };
    worker.onerror = (event) => emit('worker_error', { message: event.message || 'the engine worker failed' });
  }

  attach();
  return {
    call(cmd, args = {}, transfer = []) {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject, cmd });
        worker.postMessage({ id, cmd, args }, transfer);
      });
    },
    on(event, fn) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event).add(fn);
      return () => listeners.get(event).delete(fn);
    },
    emit,
    // Ends the current worker and starts a fresh one; calls in flight reject.
    restart() {
      worker.terminate();
      for (const { reject, cmd } of pending.values()) reject(new WorkerError(`${cmd}: the engine was restarted`));
      pending.clear();
      attach();
    },
  };
}
