/** The page a refusal or a bad request gets: the message and a way back. */
import { Layout } from './layout.tsx';

export function ErrorPage(props: { title: string; message: string }) {
  return (
    <Layout title={props.title} nav="none">
      <p class="notice error">{props.message}</p>
      <p>
        <a href="/dashboard">Back to the overview</a>
      </p>
    </Layout>
  );
}
