export * from './inventory';
export * from './key';
export * from './names';
export * from './queue';
export * from './registration';
export * from './snapshot';
export * from './status';
export * from './name-problems';
