/**
 * Where the on-call steps are: docs/playbook.md ships in the package and the
 * repository, not with the server (Workers and the binary have no docs), so
 * the page names the file and the step rather than linking to a copy.
 */
export function PlaybookHint(props: { step: string }) {
  return (
    <p class="hint playbook">
      On call? The incident steps are in <code>docs/playbook.md</code> (in the leasehold package and repository): this page is {props.step}. The CLI
      has the same views: <code>leasehold workers</code>, <code>leasehold jobs</code>, <code>leasehold queues</code>.
    </p>
  );
}
