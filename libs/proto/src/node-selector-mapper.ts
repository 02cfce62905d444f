import type { NodeSelector } from '@slicekeeper/contracts';
import type * as wire from './generated/slicekeeper/v1/resources';

type Requirement = NonNullable<
  NodeSelector['nodeSelectorTerms'][number]['matchExpressions']
>[number];

/** A wire NodeSelector (a pool's or a device's) in core/v1's JSON shape; empty lists left out. */
export function toNodeSelector(selector: wire.NodeSelector): NodeSelector {
  return {
    nodeSelectorTerms: selector.terms.map((term) => {
      const mapped: NodeSelector['nodeSelectorTerms'][number] = {};
      if (term.matchExpressions.length > 0) {
        mapped.matchExpressions = term.matchExpressions.map(toRequirement);
      }
      if (term.matchFields.length > 0) mapped.matchFields = term.matchFields.map(toRequirement);
      return mapped;
    }),
  };
}

/** The wire form of a domain NodeSelector. */
export function fromNodeSelector(selector: NodeSelector): wire.NodeSelector {
  return {
    terms: selector.nodeSelectorTerms.map((term) => ({
      matchExpressions: (term.matchExpressions ?? []).map(fromRequirement),
      matchFields: (term.matchFields ?? []).map(fromRequirement),
    })),
  };
}

function toRequirement(requirement: wire.NodeSelectorRequirement): Requirement {
  const { key, operator, values } = requirement;
  return values.length > 0 ? { key, operator, values } : { key, operator };
}

function fromRequirement(requirement: Requirement): wire.NodeSelectorRequirement {
  return { key: requirement.key, operator: requirement.operator, values: requirement.values ?? [] };
}
