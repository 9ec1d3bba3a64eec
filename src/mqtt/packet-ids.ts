/**
 * MQTT packet identifiers for the bridge's client (mqtt.js's `messageIdProvider`).
 *
 * A QoS 1 PUBLISH, a SUBSCRIBE and an UNSUBSCRIBE each hold an identifier from the moment they are
 * sent until the broker's acknowledgement; two packets in flight with the same identifier make the
 * acknowledgement of one complete the other (mqtt.js then reports "unsuback does not answer the
 * publish pending on message id …" and a callback never runs). mqtt.js's default provider counts
 * up and wraps at 65,535 without looking at what is still in flight, so this pool hands out only
 * identifiers that are free, and none at all when every one is taken (mqtt.js then queues the
 * packet until one is released). The connection also keeps its own QoS 1 window far below 65,535,
 * so the pool never runs dry in practice; it is what makes a collision impossible, not unlikely.
 */
const IDS = 65_535;

export class PacketIdPool {
  /** 1 where the identifier (the index) is in flight; index 0 is never used. */
  readonly #used = new Uint8Array(IDS + 1);
  #inUse = 0;
  /** Where the search for a free identifier starts: the one after the last handed out. */
  #next = 1;
  #last: number | null = null;

  /** Identifiers handed out and not released. */
  get inUse(): number {
    return this.#inUse;
  }

  allocate(): number | null {
    if (this.#inUse === IDS) return null;
    let id = this.#next;
    while (this.#used[id] === 1) id = id === IDS ? 1 : id + 1;
    this.#take(id);
    return id;
  }

  getLastAllocated(): number | null {
    return this.#last;
  }

  /** An identifier mqtt.js resends from its store (false: it is taken). */
  register(id: number): boolean {
    if (!Number.isInteger(id) || id < 1 || id > IDS || this.#used[id] === 1) return false;
    this.#take(id);
    return true;
  }

  deallocate(id: number): void {
    if (!Number.isInteger(id) || id < 1 || id > IDS || this.#used[id] === 0) return;
    this.#used[id] = 0;
    this.#inUse--;
  }

  /** A new connection: nothing of the old one is in flight. */
  clear(): void {
    this.#used.fill(0);
    this.#inUse = 0;
  }

  #take(id: number): void {
    this.#used[id] = 1;
    this.#inUse++;
    this.#last = id;
    this.#next = id === IDS ? 1 : id + 1;
  }
}
