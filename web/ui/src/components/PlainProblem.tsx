import { plainProblem } from "../plainProblem";

// PlainProblem shows a message in plain words with the technical path
// and message underneath in small print (or the message alone when no
// plain wording is known).
export function PlainProblem({ message, path, src }: { message: string; path?: string; src?: string }) {
  const plain = plainProblem(message, src);
  if (!plain)
    return (
      <>
        {path ? <span className="mono">{path}: </span> : null}
        {message}
      </>
    );
  return (
    <>
      <span data-plain>{plain}</span>
      <small className="technical mono" data-technical>
        {path ? `${path}: ` : ""}
        {message}
      </small>
    </>
  );
}
