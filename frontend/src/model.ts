// The anywidget model, and requests to the kernel that expect a reply (rows of a grid, an
// export, one commit in full). Every request carries an id unique to this view; the kernel
// answers with the same id (every view of the model hears every reply and keeps its own).

export interface AnyModel {
  get(name: string): any;
  set(name: string, value: unknown): void;
  save_changes(): void;
  on(event: string, cb: (...args: any[]) => void): void;
  off(event: string, cb?: (...args: any[]) => void): void;
  send(content: unknown, callbacks?: unknown, buffers?: ArrayBuffer[] | ArrayBufferView[]): void;
}

export interface Reply {
  content: Record<string, any>;
  buffers: DataView[];
}

let views = 0;

export class Rpc {
  private pending = new Map<string, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  private n = 0;
  private readonly prefix: string;
  private readonly listener: (content: any, buffers: DataView[]) => void;

  constructor(readonly model: AnyModel) {
    views += 1;
    this.prefix = `${Date.now().toString(36)}-${views}-${Math.random().toString(36).slice(2, 8)}`;
    this.listener = (content: any, buffers: DataView[]) => {
      const req = content && content.req;
      if (typeof req !== 'string') return;
      const p = this.pending.get(req);
      if (!p) return;
      this.pending.delete(req);
      if (content.error) p.reject(new Error(String(content.error)));
      else p.resolve({ content, buffers: buffers || [] });
    };
    model.on('msg:custom', this.listener);
  }

  /** Send `{type, ...payload}` and resolve with the kernel's reply. */
  request(type: string, payload: Record<string, unknown>): Promise<Reply> {
    this.n += 1;
    const req = `${this.prefix}-${this.n}`;
    return new Promise((resolve, reject) => {
      this.pending.set(req, { resolve, reject });
      this.model.send({ type, req, ...payload });
    });
  }

  /** A message with no reply (preview, run, refresh). */
  tell(type: string, payload: Record<string, unknown> = {}): void {
    this.model.send({ type, ...payload });
  }

  dispose(): void {
    this.model.off('msg:custom', this.listener);
    for (const p of this.pending.values()) p.reject(new Error('the explorer view was closed'));
    this.pending.clear();
  }
}

/** Set traits and send them in one message. */
export function setState(model: AnyModel, patch: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(patch)) model.set(k, v);
  model.save_changes();
}
