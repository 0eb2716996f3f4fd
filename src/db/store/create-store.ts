/**
 * createStore(db): the JobStore port (port.ts) over one Drizzle database,
 * libSQL or D1 alike. Every method delegates to the store function of the
 * same name: the SQL stays in its own file, written once.
 *
 * @example
 *   const store = createStore(db);
 *   const [job] = await store.jobsClaimPending({ queue: 'mail', workerId: 'w1', limit: 1, now: DB_CLOCK, defaults: config });
 */
import type { Db } from '../db.ts';
import { queueMinutesSampleHeartbeatLag, queueMinutesSince } from './activity.ts';
import {
  alertEvaluationClaimIfDue,
  alertNotificationMarkDeliveredIfHeld,
  alertNotificationMarkFailedIfHeld,
  alertNotificationsClaimDue,
  alertNotificationsMarkIfHeld,
  alertStatesList,
  alertStatesRecord,
} from './alert-states.ts';
import { jobsClaimPending, jobsClaimPendingWithRateWait, queueClaimableCount } from './claim.ts';
import { createDashboardStore } from './create-dashboard-store.ts';
import { duplicateReportIfOwned } from './duplicates.ts';
import { effectFinishIfOwned, effectStartIfOwned, stepsListIfOwned, effectsForJob } from './effects.ts';
import { jobsInsert, jobsInsertSummaries } from './enqueue.ts';
import { queuesGroupCounts } from './group-counts.ts';
import { deadLetterQueuesList, jobsDeadLetterList, jobsRedrive } from './dead-letters.ts';
import { jobSnoozeIfOwned } from './snooze.ts';
import { jobDependencyGraph, jobsDependencyCandidates, jobsInsertFlow } from './dependencies.ts';
import { dependencyCascadeOf, dependencyCascadesOwed, dependencyCascadeStep } from './dependency-cascades.ts';
import { jobFailIfOwned, jobsCompleteIfOwned, jobsCompleteThenClaim, jobsReleaseIfOwned } from './finish.ts';
import { jobCheckpointIfOwned, jobsHeartbeatIfOwned } from './lease.ts';
import { maintenancePassRecord, maintenanceWatch } from './maintenance-state.ts';
import { metricsSnapshot } from './metrics.ts';
import { jobCancelIfPending, jobRetryIfFinishedUnsuccessfully, jobsBulkAct, jobsBulkMatching, jobsBulkPreview } from './operator.ts';
import type { AuditAndFormWrites, AuditReads, JobStore, JobSummaries, MaintenanceServices, ScheduleStore } from './port.ts';
import { auditInsert, auditList, auditLoginFailed } from './audit.ts';
import { formNonceUsed, isFormNonceReplay } from './form-nonces.ts';
import { queueBlockers, queueDeleteIfUnused, queueFinishedJobsPurge } from './queue-delete.ts';
import { eventsForJob, jobGet, jobsList, jobSummariesList, queuesHealth, readNow } from './read.ts';
import { queueAlertThresholds, queueSetAlertThresholds, queueUpsertSettings } from './queue-settings.ts';
import { queueIndexedFields, queueSetIndexedFields } from './indexed-fields.ts';
import { jobsGetWithinBytes, jobsWatchStates } from './watch.ts';
import { jobsGetReapCandidates, jobsReapIfUnchanged, jobsRecordHeld } from './reaper.ts';
import { ownerCheckRefusalsAdd } from './owner-check-counts.ts';
import { reaperHoldBegin, reaperHoldRead } from './reaper-hold.ts';
import { clockLatestRecorded, clockStepBackSettle, jobsRebaseAfterStepBack } from './clock-step.ts';
import { tuningEvidenceRead } from './tuning-evidence.ts';
import { canaryRunCancel, canaryRunFinish, canaryRunRead, canaryRunSelect, canaryRunsActive, canaryRunsList, canaryRunStart, canaryStepHealth, canaryStepTake } from './canary.ts';
import { jobRequeueIfReaperWould, jobRequeuePlan } from './requeue.ts';
import { jobCompleteIfHeld, jobFailIfHeld, jobReleaseIfHeld, jobsHeldCounts, jobsHeldList } from './held.ts';
import { retentionPrune } from './retention.ts';
import {
  scheduleAdvanceIfUnchanged,
  scheduleCreate,
  scheduleDelete,
  scheduleEnqueueOccurrence,
  scheduleFireIfUnchanged,
  scheduleSkipIfUnchanged,
  scheduleSkipsList,
  schedulesNextDueAt,
  scheduleGet,
  scheduleReplace,
  schedulesDue,
  schedulesList,
} from './schedules.ts';
import { sessionIsRevoked, sessionRevoke } from './sessions.ts';
import { jobsListStalled } from './stalls.ts';
import { workersHeldJobs } from './worker-jobs.ts';
import { workerBeat } from './lost-claims.ts';
import { workersList } from './workers.ts';

export type { JobStore } from './port.ts';

export function createStore(db: Db): JobStore {
  return {
    jobsInsert: (p) => jobsInsert(db, p),
    jobsClaimPending: (p) => jobsClaimPending(db, p),
    jobsClaimPendingWithRateWait: (p) => jobsClaimPendingWithRateWait(db, p),
    queueClaimableCount: (p) => queueClaimableCount(db, p),
    jobsHeartbeatIfOwned: (p) => jobsHeartbeatIfOwned(db, p),
    jobCheckpointIfOwned: (p) => jobCheckpointIfOwned(db, p),
    jobsCompleteIfOwned: ((p: Parameters<typeof jobsCompleteIfOwned>[1]) => jobsCompleteIfOwned(db, p)) as JobStore['jobsCompleteIfOwned'],
    jobsCompleteThenClaim: (p) => jobsCompleteThenClaim(db, p),
    jobFailIfOwned: (p) => jobFailIfOwned(db, p),
    jobsReleaseIfOwned: ((p: Parameters<typeof jobsReleaseIfOwned>[1]) => jobsReleaseIfOwned(db, p)) as JobStore['jobsReleaseIfOwned'],

    effectStartIfOwned: (p) => effectStartIfOwned(db, p),
    effectFinishIfOwned: (p) => effectFinishIfOwned(db, p),
    stepsListIfOwned: (p) => stepsListIfOwned(db, p),
    duplicateReportIfOwned: (p) => duplicateReportIfOwned(db, p),

    jobCancelIfPending: (p) => jobCancelIfPending(db, p),
    jobRetryIfFinishedUnsuccessfully: (p) => jobRetryIfFinishedUnsuccessfully(db, p),
    jobRequeueIfReaperWould: (p) => jobRequeueIfReaperWould(db, p),
    jobRequeuePlan: (p) => jobRequeuePlan(db, p),
    jobReleaseIfHeld: (p) => jobReleaseIfHeld(db, p),
    jobCompleteIfHeld: (p) => jobCompleteIfHeld(db, p),
    jobFailIfHeld: (p) => jobFailIfHeld(db, p),
    jobsHeldList: (p) => jobsHeldList(db, p),
    jobsHeldCounts: () => jobsHeldCounts(db),
    effectsForJob: (p) => effectsForJob(db, p),
    jobsBulkMatching: (p) => jobsBulkMatching(db, p),
    jobsBulkPreview: (p) => jobsBulkPreview(db, p),
    jobsBulkAct: (p) => jobsBulkAct(db, p),
    jobsDeadLetterList: (p) => jobsDeadLetterList(db, p),
    deadLetterQueuesList: (p) => deadLetterQueuesList(db, p),
    jobsRedrive: (p) => jobsRedrive(db, p),
    jobSnoozeIfOwned: (p) => jobSnoozeIfOwned(db, p),

    canaryRunSelect: (p) => canaryRunSelect(db, p),
    canaryRunStart: (p) => canaryRunStart(db, p),
    canaryRunRead: (p) => canaryRunRead(db, p),
    canaryRunsActive: (p) => canaryRunsActive(db, p),
    canaryRunsList: (p) => canaryRunsList(db, p),
    canaryStepTake: (p) => canaryStepTake(db, p),
    canaryStepHealth: (p) => canaryStepHealth(db, p),
    canaryRunFinish: (p) => canaryRunFinish(db, p),
    canaryRunCancel: (p) => canaryRunCancel(db, p),

    jobsGetReapCandidates: (p) => jobsGetReapCandidates(db, p),
    jobsReapIfUnchanged: (p) => jobsReapIfUnchanged(db, p),
    jobsRecordHeld: (p) => jobsRecordHeld(db, p),
    ownerCheckRefusalsAdd: (p) => ownerCheckRefusalsAdd(db, p),
    reaperHoldBegin: (p) => reaperHoldBegin(db, p),
    reaperHoldRead: (p) => reaperHoldRead(db, p),
    clockLatestRecorded: (p) => clockLatestRecorded(db, p),
    jobsRebaseAfterStepBack: (p) => jobsRebaseAfterStepBack(db, p),
    clockStepBackSettle: (p) => clockStepBackSettle(db, p),

    queuesHealth: (p) => queuesHealth(db, p),
    queuesGroupCounts: (p) => queuesGroupCounts(db, p),
    queueUpsertSettings: (p) => queueUpsertSettings(db, p),
    queueAlertThresholds: (p) => queueAlertThresholds(db, p),
    queueSetAlertThresholds: (p) => queueSetAlertThresholds(db, p),
    queueIndexedFields: (p) => queueIndexedFields(db, p),
    queueSetIndexedFields: (p) => queueSetIndexedFields(db, p),
    queueBlockers: (p) => queueBlockers(db, p),
    queueFinishedJobsPurge: (p) => queueFinishedJobsPurge(db, p),
    queueDeleteIfUnused: (p) => queueDeleteIfUnused(db, p),
    workerBeat: (p) => workerBeat(db, p),
    workersList: (p) => workersList(db, p),
    workersHeldJobs: (p) => workersHeldJobs(db, p),

    readNow: () => readNow(db),
    jobGet: (p) => jobGet(db, p.id),
    jobsList: (p) => jobsList(db, p),
    eventsForJob: (p) => eventsForJob(db, p),
    jobsListStalled: (p) => jobsListStalled(db, p),
    queueMinutesSince: (p) => queueMinutesSince(db, p),
    metricsSnapshot: (p) => metricsSnapshot(db, p),
    jobsWatchStates: (p) => jobsWatchStates(db, p),
    jobsGetWithinBytes: (p) => jobsGetWithinBytes(db, p),
    tuningEvidenceRead: (p) => tuningEvidenceRead(db, p),

    alertEvaluationClaimIfDue: (p) => alertEvaluationClaimIfDue(db, p),
    alertStatesRecord: (p) => alertStatesRecord(db, p),
    alertStatesList: () => alertStatesList(db),
    alertNotificationsClaimDue: (p) => alertNotificationsClaimDue(db, p),
    alertNotificationMarkDeliveredIfHeld: async (p) => (await alertNotificationMarkDeliveredIfHeld(db, p)).length > 0,
    alertNotificationMarkFailedIfHeld: async (p) => (await alertNotificationMarkFailedIfHeld(db, p)).length > 0,

    sessionRevoke: (p) => sessionRevoke(db, p),
    sessionIsRevoked: (p) => sessionIsRevoked(db, p.sid),

    ...apiAndMaintenanceParts(db),
    // The dashboard's section (DashboardReads in port.ts), from its own factory.
    ...createDashboardStore(db),
    maintenancePassRecord: (p) => maintenancePassRecord(db, p),
    maintenanceWatch: (p) => maintenanceWatch(db, p),
    jobsInsertFlow: (p) => jobsInsertFlow(db, p),
    jobsDependencyCandidates: (p) => jobsDependencyCandidates(db, p),
    jobDependencyGraph: (p) => jobDependencyGraph(db, p),
    dependencyCascadeStep: (p) => dependencyCascadeStep(db, p),
    dependencyCascadeOf: (p) => dependencyCascadeOf(db, p),
    dependencyCascadesOwed: () => dependencyCascadesOwed(db),
  };
}

/** The port's sections for the API, the CLI and the maintenance services (port.ts). */
function apiAndMaintenanceParts(db: Db): AuditReads & JobSummaries & ScheduleStore & MaintenanceServices & AuditAndFormWrites {
  return {
    auditList: (p) => auditList(db, p),

    jobSummariesList: (p) => jobSummariesList(db, p),
    jobsInsertSummaries: (p) => jobsInsertSummaries(db, p),

    schedulesList: () => schedulesList(db),
    scheduleGet: (p) => scheduleGet(db, p.name),
    scheduleCreate: (p) => scheduleCreate(db, p),
    scheduleReplace: (p) => scheduleReplace(db, p),
    scheduleDelete: (p) => scheduleDelete(db, p.name),
    schedulesDue: (p) => schedulesDue(db, p),
    scheduleEnqueueOccurrence: (p) => scheduleEnqueueOccurrence(db, p),
    scheduleAdvanceIfUnchanged: (p) => scheduleAdvanceIfUnchanged(db, p),
    scheduleFireIfUnchanged: (p) => scheduleFireIfUnchanged(db, p),
    scheduleSkipIfUnchanged: (p) => scheduleSkipIfUnchanged(db, p),
    scheduleSkipsList: (p) => scheduleSkipsList(db, p),
    schedulesNextDueAt: () => schedulesNextDueAt(db),

    queueMinutesSampleHeartbeatLag: async (p) => await queueMinutesSampleHeartbeatLag(db, p),
    retentionPrune: (p) => retentionPrune(db, p),
    alertNotificationsMarkIfHeld: (p) => alertNotificationsMarkIfHeld(db, p),

    auditInsert: async (p) => {
      await auditInsert(db, p);
    },
    auditLoginFailed: (p) => auditLoginFailed(db, p),
    formNonceUsed: (p) => formNonceUsed(db, p.nonce),
    isFormNonceReplay: (p) => isFormNonceReplay(p.error),
  };
}
