/** Session-scoped LIFECYCLE records (SUSPEND, RESUME, FORK, CANCEL). */
export { lifecycleEvent, Lifecycle_Kind } from "../controller/events.js";
