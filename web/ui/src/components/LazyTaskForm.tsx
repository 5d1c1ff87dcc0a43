// TaskForm, loaded when a form is first shown: react-jsonschema-form and
// its validator are most of their own chunk, which pages without forms never fetch.
import { forwardRef, lazy, Suspense } from "react";
import type { Problem } from "../api";
import type { TaskFormHandle } from "./TaskForm";

export type { TaskFormHandle };

const Impl = lazy(() => import("./TaskForm").then((m) => ({ default: m.TaskForm })));

export const TaskForm = forwardRef<
  TaskFormHandle,
  { id: string; schema: Record<string, any>; value: any; onChange: (v: any) => void; serverProblems: Problem[]; disabled?: boolean; inside?: boolean }
>(function LazyTaskForm(props, ref) {
  return (
    <Suspense fallback={<p className="muted small">Loading the form…</p>}>
      <Impl ref={ref} {...props} />
    </Suspense>
  );
});
