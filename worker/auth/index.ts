export { createAuthenticator, bearerOf, type AuthEnv, type AuthOutcome, type Authenticator } from "./authenticate.js";
export { refuseRole, roleFor } from "./authorize.js";
export { identityOf, rolesFrom, ROLES, type Principal, type Role } from "./principal.js";
export { recordedIdentity } from "./recorded-identity.js";
