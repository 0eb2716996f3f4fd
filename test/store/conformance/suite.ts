/**
 * The store conformance suite: what every backend we ship must do, the same
 * tests on each. test/store/conformance/libsql.test.ts runs it on a libSQL file in
 * Node, test/runtimes/workers/store-conformance.test.ts on D1 in workerd. A new
 * backend is a new small file that calls defineStoreConformance.
 */
import { describe } from 'vitest';
import type { StoreBackend } from './support.ts';
import { defineAuditAndForms } from './audit-forms.conformance.ts';
import { defineCanary } from './canary.conformance.ts';
import { defineClaimBudget } from './claim-budget.conformance.ts';
import { defineClockStep } from './clock-step.conformance.ts';
import { defineDeadLetters } from './dead-letters.conformance.ts';
import { defineDashboardReads } from './dashboard.conformance.ts';
import { defineGuards } from './guards.conformance.ts';
import { defineGroups } from './groups.conformance.ts';
import { defineHeld } from './held.conformance.ts';
import { defineDependencies } from './dependencies.conformance.ts';
import { defineHistograms } from './histograms.conformance.ts';
import { defineJobSearch } from './job-search.conformance.ts';
import { defineKeyModes } from './key-modes.conformance.ts';
import { defineLimits } from './limits.conformance.ts';
import { defineLostAnswers } from './lost-answers.conformance.ts';
import { defineMaintenanceWatch } from './maintenance-watch.conformance.ts';
import { defineOperator } from './operator.conformance.ts';
import { defineQueueFeatures } from './queue-features.conformance.ts';
import { defineReads } from './reads.conformance.ts';
import { defineReaper } from './reaper.conformance.ts';
import { defineReaperHold } from './reaper-hold.conformance.ts';
import { defineTransitions } from './transitions.conformance.ts';
import { defineWatchReads } from './watch.conformance.ts';

export type { StoreBackend } from './support.ts';

export function defineStoreConformance(backend: StoreBackend): void {
  describe(`store conformance on ${backend.name}`, () => {
    defineTransitions(backend);
    defineGuards(backend);
    defineLostAnswers(backend);
    defineReaper(backend);
    defineReaperHold(backend);
    defineClockStep(backend);
    defineHeld(backend);
    defineDependencies(backend);
    defineOperator(backend);
    defineReads(backend);
    defineJobSearch(backend);
    defineLimits(backend);
    defineQueueFeatures(backend);
    defineKeyModes(backend);
    defineClaimBudget(backend);
    defineAuditAndForms(backend);
    defineDashboardReads(backend);
    defineMaintenanceWatch(backend);
    defineHistograms(backend);
    defineWatchReads(backend);
    defineCanary(backend);
    defineDeadLetters(backend);
    defineGroups(backend);
  });
}
