import { planSocket } from './plan-socket';
import type { SocketAction, SocketFacts } from './plan-socket';

describe('planSocket', () => {
  const cases: { name: string; facts: SocketFacts; action: SocketAction }[] = [
    {
      name: 'register-new-socket',
      facts: { present: 'a', registered: undefined, refused: undefined },
      action: 'register',
    },
    {
      name: 'keep-registered',
      facts: { present: 'a', registered: 'a', refused: undefined },
      action: 'none',
    },
    {
      name: 'register-replaced-socket',
      facts: { present: 'b', registered: 'a', refused: undefined },
      action: 'register',
    },
    {
      name: 'deregister-removed-socket',
      facts: { present: undefined, registered: 'a', refused: undefined },
      action: 'deregister',
    },
    {
      name: 'forget-removed-unregistered-socket',
      facts: { present: undefined, registered: undefined, refused: 'a' },
      action: 'forget',
    },
    {
      name: 'leave-refused-socket',
      facts: { present: 'a', registered: undefined, refused: 'a' },
      action: 'none',
    },
    {
      name: 'register-refused-socket-once-replaced',
      facts: { present: 'b', registered: undefined, refused: 'a' },
      action: 'register',
    },
  ];

  it.each(cases)('$name', ({ facts, action }) => {
    expect(planSocket(facts)).toBe(action);
  });
});
