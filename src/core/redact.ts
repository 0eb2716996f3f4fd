/** A database URL for logs: credentials in it are masked. */
export const redactUrl = (url: string) => url.replace(/\/\/[^@/]*@/, '//***@');
