// Times as the console shows them: the browser's local zone, with an age relative to now
// ("3 min ago", "in 20 s"), and the full UTC instant on hover (the server's RFC 3339 strings).

const LOCAL = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const CLOCK = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });

/** "< 1 s", "42 s", "5 min", "3 h 12 min", "6 h", "2 d 4 h", "2 d": two units at most. */
export function duration(seconds) {
  if (seconds < 1) return "< 1 s";
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  return hours % 24 ? `${Math.floor(hours / 24)} d ${hours % 24} h` : `${Math.floor(hours / 24)} d`;
}

/**
 * A stored setting's `seconds` in `duration`'s words ("2 d", "6 h"), with the exact figure when
 * those words round it ("1 min (90 s)"); under a minute, as given ("0.5 s"). They read "172800 s"
 * beside the console's "2 d" ages (new-user finding M17, session 7).
 */
export function setting(seconds) {
  if (seconds < 60) return `${seconds} s`;
  const words = duration(seconds);
  return seconds % (seconds < 86_400 ? 60 : 3600) === 0 ? words : `${words} (${seconds} s)`;
}

/** "3 min ago" or "in 20 s", relative to now. */
export function relative(instant) {
  const seconds = (Date.parse(instant) - Date.now()) / 1000;
  return seconds > 0 ? `in ${duration(seconds)}` : `${duration(-seconds)} ago`;
}

/** "2 Dec 2026, 01:19:28": the browser's zone and locale. */
export const local = (instant) => LOCAL.format(new Date(instant));

/** "01:19:28": the browser's zone and locale. */
export const clock = (date) => CLOCK.format(date);

/** The full instant in UTC, for tooltips: "2026-12-02 00:19:28.123 UTC". */
export const utc = (instant) => `${new Date(instant).toISOString().replace("T", " ").slice(0, -1)} UTC`;

/**
 * A <time> element showing `instant` relative to now (with the local time when `withLocal`),
 * the UTC instant as its tooltip; `tick` keeps the relative part current.
 */
export function timeElement(instant, withLocal = false) {
  const element = document.createElement("time");
  element.dateTime = instant;
  element.title = utc(instant);
  if (withLocal) element.dataset.local = local(instant);
  element.textContent = label(element);
  return element;
}

function label(element) {
  const age = relative(element.dateTime);
  return element.dataset.local ? `${element.dataset.local} (${age})` : age;
}

/** Brings every relative time of the page up to now. */
export function tick() {
  for (const element of document.querySelectorAll("time[datetime]")) {
    element.textContent = label(element);
  }
}
