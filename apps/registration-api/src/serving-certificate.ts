import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext } from 'node:tls';
import { TerminalError, errorMessage } from '@slicekeeper/errors';
import type { Logger } from '@slicekeeper/observability';
import { systemClock } from '@slicekeeper/time';
import type { Clock, TimerHandle } from '@slicekeeper/time';

/** A certificate (chain) and its private key, PEM. */
export interface CertificatePair {
  cert: Buffer;
  key: Buffer;
}

/**
 * Reads a certificate and key and checks that they make a TLS context (parsable, the key
 * belongs to the certificate); throws a `TerminalError` naming the files otherwise.
 */
export async function readCertificatePair(
  certFile: string,
  keyFile: string,
): Promise<CertificatePair> {
  let pair: CertificatePair;
  try {
    pair = { cert: await readFile(certFile), key: await readFile(keyFile) };
    createSecureContext(pair);
  } catch (error) {
    throw new TerminalError(
      `TLS_CERT_FILE "${certFile}" / TLS_KEY_FILE "${keyFile}": ${errorMessage(error)}`,
      { code: 'invalid-config', cause: error },
    );
  }
  return pair;
}

export interface ServingCertificateOptions {
  certFile: string;
  keyFile: string;
  /** The pair being served, as read at start. */
  current: CertificatePair;
  /** Serves a new pair from the next handshake on (`https.Server#setSecureContext`). */
  apply: (pair: CertificatePair) => void;
  logger: Logger;
  /**
   * Quiet time after the last change before the files are read, ms: cert-manager and a
   * Secret volume write the key and the certificate one after the other. @defaultValue 500
   */
  debounceMs?: number;
  clock?: Clock;
}

/**
 * Serves the newest certificate without a restart. The directories of both files are watched
 * (a Secret volume replaces a symlink, which a watch on the file itself would not see); after a
 * quiet `debounceMs` both are read, and a pair that does not make a TLS context (half-written,
 * key of another certificate) is logged and the one being served is kept.
 */
export class ServingCertificate {
  private readonly options: ServingCertificateOptions;
  private readonly clock: Clock;
  private readonly watchers: FSWatcher[] = [];
  private current: CertificatePair;
  private timer: TimerHandle | undefined;
  private reloading: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(options: ServingCertificateOptions) {
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.current = options.current;
  }

  start(): void {
    for (const dir of new Set([dirname(this.options.certFile), dirname(this.options.keyFile)])) {
      const watcher = watch(dir, { persistent: false }, () => {
        this.schedule();
      });
      watcher.on('error', (error) => {
        this.options.logger.warn({ err: error, dir }, 'certificate watch failed');
      });
      this.watchers.push(watcher);
    }
  }

  /** Reads the files now; resolves when the pair is applied or refused. */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(() => this.readAndApply());
    return this.reloading;
  }

  close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    for (const watcher of this.watchers) watcher.close();
    return this.reloading;
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      void this.reload();
    }, this.options.debounceMs ?? 500);
  }

  private async readAndApply(): Promise<void> {
    if (this.closed) return;
    const { certFile, keyFile, logger } = this.options;
    let pair: CertificatePair;
    try {
      pair = await readCertificatePair(certFile, keyFile);
    } catch (error) {
      logger.warn({ err: error }, 'certificate not reloaded; serving the previous one');
      return;
    }
    if (pair.cert.equals(this.current.cert) && pair.key.equals(this.current.key)) return;
    try {
      this.options.apply(pair);
    } catch (error) {
      logger.warn({ err: error }, 'certificate not reloaded; serving the previous one');
      return;
    }
    this.current = pair;
    logger.info({ certFile }, 'certificate reloaded');
  }
}
