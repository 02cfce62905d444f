export { ManualClock, flushPromises } from './manual-clock';
