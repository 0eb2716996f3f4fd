/** The hidden fields of an action form: its one-time CSRF token, and where to go back to after it (a dashboard path). */
export function FormToken(props: { csrf: string; returnTo?: string }) {
  return (
    <>
      <input type="hidden" name="_csrf" value={props.csrf} />
      {props.returnTo ? <input type="hidden" name="return_to" value={props.returnTo} /> : null}
    </>
  );
}
