/**
 * The SDK's version as Hello.agent reports it to operators. A constant rather than a read of
 * package.json, so the SDK does not depend on where it is installed; a test keeps it equal to the
 * package version.
 */
export const SDK_VERSION = "0.1.0";
export const SDK_AGENT = `agentsessions-sdk/${SDK_VERSION}`;
