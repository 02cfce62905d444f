/** One `FROM … AS name` stage of a Dockerfile, with what a check needs to know about it. */
export interface DockerfileStage {
  name: string | undefined;
  /** The image or earlier stage it starts from. */
  from: string;
  /** The last `USER` of the stage, inherited from an earlier stage it is built on. */
  user: string | undefined;
  /** The exec-form `CMD`, inherited likewise. */
  cmd: readonly string[] | undefined;
  /** Every `RUN` command, continuation lines joined. */
  runs: readonly string[];
  /** The variables its `ENV` lines set, with those of an earlier stage it is built on. */
  env: Readonly<Record<string, string>>;
}

/** Splits a Dockerfile into stages (line continuations joined, comments dropped). */
export function dockerfileStages(text: string): DockerfileStage[] {
  const instructions = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const stages: DockerfileStage[] = [];
  for (const instruction of instructions) {
    const [keyword = '', ...rest] = instruction.split(/\s+/);
    const argument = instruction.slice(keyword.length).trim();
    const current = stages.at(-1);
    switch (keyword.toUpperCase()) {
      case 'FROM': {
        const from = rest[0] ?? '';
        const name = rest[1]?.toUpperCase() === 'AS' ? rest[2] : undefined;
        const parent = stages.find((stage) => stage.name !== undefined && stage.name === from);
        stages.push({
          name,
          from,
          user: parent?.user,
          cmd: parent?.cmd,
          runs: [],
          env: parent?.env ?? {},
        });
        break;
      }
      case 'USER':
        if (current !== undefined) current.user = argument;
        break;
      case 'CMD':
        if (current !== undefined) current.cmd = JSON.parse(argument) as string[];
        break;
      case 'RUN':
        if (current !== undefined) current.runs = [...current.runs, argument];
        break;
      case 'ENV':
        if (current !== undefined) current.env = { ...current.env, ...envPairs(argument) };
        break;
      default:
        break;
    }
  }
  return stages;
}

/**
 * The pairs of an `ENV` line, `NAME=value …` (the form this project writes: values without
 * spaces or quotes). Anything else is refused, rather than read wrong.
 */
function envPairs(argument: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of argument.split(/\s+/)) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=([^"'\s$]*)$/.exec(pair);
    if (match === null) {
      throw new Error(
        `Dockerfile: ENV ${argument}: each pair must be NAME=value without quotes, spaces or $`,
      );
    }
    pairs[match[1] ?? ''] = match[2] ?? '';
  }
  return pairs;
}
