// The IANA time zones a Wait step or a schedule trigger is read in.
// Common IANA zones, for browsers that cannot list their own.
const ZONES = [
  "UTC",
  "Europe/London",
  "Europe/Paris",
  "Europe/Berlin",
  "Europe/Madrid",
  "Europe/Moscow",
  "America/New_York",
  "America/Chicago",
  "America/Denver",
  "America/Los_Angeles",
  "America/Sao_Paulo",
  "Asia/Dubai",
  "Asia/Kolkata",
  "Asia/Singapore",
  "Asia/Shanghai",
  "Asia/Tokyo",
  "Australia/Sydney",
  "Pacific/Auckland",
];

export function zones(): string[] {
  try {
    const all = (Intl as any).supportedValuesOf?.("timeZone") as string[] | undefined;
    if (all?.length) return ["UTC", ...all.filter((z) => z !== "UTC")];
  } catch {
    /* an older browser: the common ones */
  }
  return ZONES;
}

export function knownZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
